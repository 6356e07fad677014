import { must, type HostFault, type Severity } from '@gpualert/schema';
import type { Classified, ClassifiedEvent } from './classified.ts';

const EDAC_COUNT = /^EDAC (?:[\w-]+ )?MC\d+: (?:\d+ )?(UE|CE)\b/;
const GHES_SEVERITY = /^\{(\d+)\}\[Hardware Error\]: event severity: (\w+)/;
const GHES_HEADER = /^\{(\d+)\}\[Hardware Error\]: Hardware error from APEI Generic Hardware Error Source/;
const GHES_LINE = /^\{(\d+)\}\[Hardware Error\]:\s+(.*)$/;
/**
 * An oops header: `Oops: 0000 [#1] SMP` (x86, powerpc, s390), `Internal error: Oops: 96000004 [#1]`
 * (arm64), `Internal error: Oops - BUG: 0 [#1]` (arm), `Oops [#1]` (riscv), `Oops[#1]:` (mips).
 * The word is matched only in these shapes, never as "Oops, then anything, then [#n]": a line of
 * repeated "Oops " would scan to its end from each one (quadratic: 28 s for 100k such lines).
 */
const OOPS = /(?:^|: )Oops(?::| -| ?\[#\d+\])/;

const DRAIN = 'Drain the host: an uncorrectable memory error corrupts whatever held that memory. Replace the DIMM the log names.';
const WATCH = 'Corrected errors are fixed by ECC; a DIMM that keeps correcting is failing: plan its replacement.';
const REPEAT = "Drain the host if it repeats; read the stack trace and run the vendor's hardware diagnostics.";

function host(text: string, hostFault: HostFault, severity: Severity, meaning: string, action: string, family?: string): ClassifiedEvent {
  return { type: 'event', kind: 'host', hostFault, text, severity, meaning, action, family: family ?? hostFault };
}

/**
 * The host's own faults that kill GPU jobs: memory errors (EDAC, machine checks, APEI/GHES),
 * kernel bugs and oopses, general protection faults, hung tasks, soft and hard lockups, RCU
 * stalls, NMIs and panics. Their register dumps and follow-up lines are details.
 */
export function classifyHost(text: string): Classified | undefined {
  if (text.includes('EDAC')) {
    const edac = EDAC_COUNT.exec(text);
    if (edac) {
      return edac[1] === 'UE'
        ? host(text, 'memory_ue', 'critical', 'an uncorrectable host memory error', DRAIN)
        : { ...host(text, 'memory_ce', 'warning', 'a corrected host memory error', WATCH), counts: true };
    }
    if (/^EDAC /.test(text)) return { type: 'detail', text };
  }
  if (text.includes('Hardware Error')) {
    if (/Machine check events logged/.test(text)) {
      return host(text, 'mce', 'warning', 'the CPU logged corrected machine check events', WATCH);
    }
    if (/Machine Check Exception/.test(text)) {
      return host(text, 'mce', 'critical', 'an uncorrected machine check exception', DRAIN);
    }
    const header = GHES_HEADER.exec(text);
    if (header) {
      return {
        type: 'event',
        kind: 'host',
        hostFault: 'mce',
        text,
        severity: 'warning',
        family: `ghes:${header[1]}`,
        meaning: 'the firmware reported a hardware error (APEI)',
        action: REPEAT,
      };
    }
    const ghes = GHES_SEVERITY.exec(text);
    if (ghes) {
      // Inside a record its header started, a detail (the parser reads it into that event); alone, an event.
      const level = must(ghes[2], 'GHES_SEVERITY has no optional group').toLowerCase();
      const severity: Severity = level === 'fatal' ? 'critical' : level === 'recoverable' ? 'error' : level === 'corrected' ? 'warning' : 'info';
      return host(text, 'mce', severity, `the firmware reported a ${level} hardware error (APEI)`, severity === 'warning' ? WATCH : DRAIN, `ghes:${ghes[1]}`);
    }
    if (/^(?:mce: |\{\d+\})\[Hardware Error\]/.test(text) || /^\[Hardware Error\]/.test(text)) return { type: 'detail', text };
  }
  if (/Uncorrected hardware memory error|^Memory failure: /.test(text)) {
    return host(text, 'memory_ue', 'critical', 'the kernel hit an uncorrectable memory error', DRAIN);
  }
  if (/^(?:mce: )?\[Hardware Error\]|Machine check: /.test(text)) return { type: 'detail', text };
  if (/soft lockup - CPU#/.test(text)) {
    return host(text, 'soft_lockup', 'error', 'a CPU was stuck in the kernel (soft lockup)', REPEAT);
  }
  if (/hard LOCKUP/i.test(text)) {
    return host(text, 'nmi_watchdog', 'error', 'a CPU stopped taking interrupts (hard lockup, NMI watchdog)', REPEAT);
  }
  if (/blocked for more than \d+ seconds/.test(text)) {
    return host(
      text,
      'hung_task',
      'error',
      'a task hung in the kernel',
      'Check the storage, network mounts and drivers the task waited on; drain the host if tasks keep hanging.',
    );
  }
  if (/Kernel panic - not syncing/.test(text)) {
    if (/^---\[ end /.test(text)) return { type: 'detail', text };
    return host(text, 'panic', 'critical', 'the kernel panicked', 'The host rebooted or hangs: drain it and read the panic before returning it to service.');
  }
  if (/rcu_\w{1,32} (?:self-)?detected stall|rcu: INFO: \w{1,32} (?:self-)?detected stall/.test(text)) {
    return host(text, 'rcu_stall', 'warning', 'an RCU stall: a CPU did not reach a quiescent state', REPEAT);
  }
  if (/^(?:Oops: )?general protection fault\b/.test(text)) {
    return host(text, 'gpf', 'error', 'a general protection fault in the kernel', REPEAT, 'oops');
  }
  // A crash report starts with BUG: (a bad pointer, a bad page, …) or Oops:; the Oops inside a BUG's report is its detail.
  if (/(?:^|: )BUG: /.test(text)) {
    return host(
      text,
      'bug',
      'error',
      /NULL pointer|unable to handle|paging request/.test(text) ? 'the kernel dereferenced a bad pointer (BUG)' : 'the kernel hit a BUG',
      REPEAT,
      'oops',
    );
  }
  if (OOPS.test(text)) {
    return host(text, 'oops', 'error', 'the kernel oopsed', REPEAT, 'oops');
  }
  if (/NMI received for unknown reason|NMI: (?:PCI system error|IOCK error)/.test(text)) {
    return host(
      text,
      'nmi',
      'error',
      'an NMI the kernel cannot explain (often a hardware error)',
      "Read the BMC's event log for the same minute; run the vendor's hardware diagnostics.",
    );
  }
  if (/Dazed and confused|strange power saving mode/.test(text)) return { type: 'detail', text };
  if (/Machine check/i.test(text)) {
    return host(text, 'mce', 'error', 'the CPU reported a machine check', REPEAT);
  }
  return undefined;
}

/** What a firmware (APEI/GHES) record's own lines say about the event its header started. */
export interface GhesRefinement {
  severity?: Severity;
  section?: 'memory' | 'pcie' | 'processor';
  device?: string;
}

/** Reads one `{n}[Hardware Error]:` line of a GHES record; undefined when it says nothing new. */
export function ghesLine(text: string): GhesRefinement | undefined {
  const line = GHES_LINE.exec(text);
  if (!line) return undefined;
  const body = must(line[2], 'GHES_LINE has no optional group');
  const severity = /^event severity: (\w+)/.exec(body)?.[1]?.toLowerCase();
  if (severity) return { severity: severity === 'fatal' ? 'critical' : severity === 'recoverable' ? 'error' : severity === 'corrected' ? 'warning' : 'info' };
  const section = /^section_type: (.*)$/.exec(body)?.[1];
  if (section) return /memory/i.test(section) ? { section: 'memory' } : /PCIe/i.test(section) ? { section: 'pcie' } : { section: 'processor' };
  const device = /^device_id: ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$/.exec(body)?.[1];
  return device ? { device } : undefined;
}
