import { canonicalPciBus, type KernelEventKind, type Severity } from '@gpualert/schema';

/** What one complete kernel message is to gpualert. */
export type Classified =
  | {
      readonly type: 'event';
      readonly kind: KernelEventKind;
      readonly text: string;
      readonly pciBus?: string | undefined;
      readonly xid?: number | undefined;
      readonly mig?: { gpu_instance: number; compute_instance?: number };
      readonly pid?: number | undefined;
      readonly process?: string | undefined;
      /** Set when the line itself decides; Xid lines otherwise take the catalog's. */
      readonly severity?: Severity | undefined;
      readonly meaning?: string | undefined;
      readonly action?: string | undefined;
      /** The address is only an event when it belongs to a GPU (PCIe lines of other devices). */
      readonly needsGpu?: boolean | undefined;
    }
  /** A continuation of the event before it (GSP tables, stack traces, AER register dumps). */
  | { readonly type: 'detail'; readonly text: string }
  | { readonly type: 'drop' };

const DROP: Classified = { type: 'drop' };

/** Cheap first test: a line with none of these words is not about a GPU or the host's health. */
const INTERESTING =
  /NVRM|segfault|nvidia|Xid|AER|PCIe|oom|out of memory|Killed process|temperature|Hardware Error|lockup|blocked for more|panic|Call Trace|TASK>|\+0x|Hardware name|CPU: \d|Temperature|unwind stack|stack frame|Kernel Offset|insufficient power|error status|TLP Header|\(First\)|\] [A-Za-z]+\s+\(/;

const XID = /^NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{2,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)(?: GPU-I:(\d+))?(?: GPU-CI:(\d+))?\): (\d+)(?:,\s*(.*))?$/;
const PID = /^pid=(?:'?<unknown>'?|(\d+)),\s*/;
const NAME = /^name=([^,]*),?\s*/;
const NVLINK5_TOKEN = /\b(Fatal|Nonfatal)\b/;
const RECOVERY = /to (0x[0-9a-fA-F]+) \(([^)]+)\)/;
const SXID = /^nvidia-nvswitch(\d+): SXid \(PCI:([0-9A-Fa-f:.]+)\): (\d+), (.*)$/;
const FALLEN = /^NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus/;
const FALLEN_LONG = /^NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]+)\b.*fallen off the bus/;
const PROBE_FAILED = /^nvidia: probe of ([0-9A-Fa-f:.]+) failed/;
const GSP_RATE = /^NVRM: Rate limiting GSP RPC error prints for GPU at (?:PCI:)?([0-9A-Fa-f:.]+)/;
const NVRM_DETAIL = /^NVRM: (?:GPU\d+ (?:GSP RPC buffer|RPC history|RPC event history)|\s+(?:entry|-?\d+)\s|GPU [0-9A-Fa-f:.]+: GPU serial number|A GPU crash dump|nvidia-bug-report|the NVIDIA kernel module)/;
const NVRM_IDENTITY = /^NVRM: (?:GPU at PCI:|GPU Board Serial Number|loading NVIDIA|RmInitAdapter|nvidia-modeset)/;
const AER_ERROR = /^(?:(\S+) )?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): (?:AER: )?PCIe Bus Error: severity=([^,]+)/;
const AER_RECEIVED = /(Multiple )?(Corrected|Uncorrected(?: \(Non-Fatal\))?|Fatal|Non-Fatal)[^:]*error(?:s)? received: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)/;
const AER_DETAIL = /(?:device \[[0-9a-f]{4}:[0-9a-f]{4}\] error status|TLP Header|^\S+ [0-9a-f:.]+:\s+(?:AER:\s+)?\[\s*\d+\]\s+\S+\s+\(|^[0-9a-f:.]+:\s+\[\s*\d+\])/;
const BANDWIDTH = /^(\S+) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): .*available PCIe bandwidth, limited by/;
const OOM_KILLED = /(?:Killed process|Kill process) (\d+)(?:, UID \d+,)? \(([^)]+)\)/;
const SEGFAULT_GPU_LIB = /^(\S+)\[(\d+)\]: segfault at .* in (libcuda|libnccl|libcudart|libcublas|libnvidia)/;
const STACK =
  /^(?:CPU: \d+ PID: \d+|Hardware name:|Call Trace:|<\/?TASK>|\??\s*[\w.]+\+0x[0-9a-f]+\/0x[0-9a-f]+|WARNING: kernel stack frame pointer|unwind stack type|Kernel Offset:|RIP:|Code:|RSP:|R[A-Z0-9]{2}:)/;

function bus(raw: string): string | undefined {
  return canonicalPciBus(raw) ?? undefined;
}

/** Decides what one complete message (continuations joined) is; pure and allocation-light. */
export function classify(text: string): Classified {
  if (!INTERESTING.test(text)) return DROP;
  if (text.startsWith('NVRM: ')) return classifyNvrm(text);
  if (STACK.test(text.trimStart())) return { type: 'detail', text };

  const sxid = SXID.exec(text);
  if (sxid) {
    const rest = sxid[4]!;
    const fatal = /^Fatal\b/i.test(rest);
    const nonfatal = /^Non-?fatal\b/i.test(rest);
    if (!fatal && !nonfatal) return { type: 'detail', text };
    return {
      type: 'event', kind: 'sxid', text, pciBus: bus(sxid[2]!), xid: Number(sxid[3]),
      severity: fatal ? 'critical' : 'warning',
      meaning: `NVSwitch ${fatal ? 'fatal' : 'non-fatal'} error (nvswitch${sxid[1]})`,
      action: fatal
        ? 'Drain the NVSwitch system; a fatal SXid needs the GPUs and switches reset (Fabric Manager) or a reboot.'
        : 'Watch the link; non-fatal SXids that repeat point at a cable or switch port.',
    };
  }

  const aer = AER_ERROR.exec(text);
  if (aer) {
    const severity = /fatal\)?$/i.test(aer[3]!) && !/non-fatal/i.test(aer[3]!) ? 'critical' : /uncorrect/i.test(aer[3]!) ? 'error' : 'warning';
    return {
      type: 'event', kind: 'pcie_aer', text, pciBus: bus(aer[2]!), severity, needsGpu: aer[1] !== 'nvidia',
      meaning: `PCIe ${aer[3]!.trim()} error on the GPU's link`,
      action: severity === 'warning'
        ? 'Corrected errors are retried by the link; a steady rate means a bad riser, slot or cable.'
        : 'Drain the GPU; an uncorrected PCIe error often precedes the GPU falling off the bus. Reseat or replace the riser.',
    };
  }
  const received = AER_RECEIVED.exec(text);
  if (received && /AER/.test(text)) {
    const kind = received[2]!;
    const severity = /^Fatal/.test(kind) ? 'critical' : /Uncorrected|Non-Fatal/.test(kind) ? 'error' : 'warning';
    return {
      type: 'event', kind: 'pcie_aer', text, pciBus: bus(received[3]!), severity, needsGpu: true,
      meaning: `PCIe ${kind.toLowerCase()} error on the GPU's link`,
      action: 'Corrected errors are retried by the link; a steady rate means a bad riser, slot or cable.',
    };
  }
  if (AER_DETAIL.test(text)) return { type: 'detail', text };

  const bandwidth = BANDWIDTH.exec(text);
  if (bandwidth) {
    return {
      type: 'event', kind: 'other_gpu', text, pciBus: bus(bandwidth[2]!), severity: 'warning', needsGpu: bandwidth[1] !== 'nvidia',
      meaning: 'PCIe link trained below its capability at boot',
      action: 'Check the slot, riser and BIOS PCIe settings; the GPU gets a fraction of its host bandwidth.',
    };
  }

  const oom = OOM_KILLED.exec(text);
  if (oom) {
    return {
      type: 'event', kind: 'oom_kill', text, pid: Number(oom[1]), process: oom[2]!, severity: 'warning',
      meaning: 'the kernel killed a process for lack of memory',
      action: 'Give the job more host memory or lower its batch size; check its cgroup limit.',
    };
  }
  if (/invoked oom-killer|oom-kill:constraint|oom_reaper|Memory cgroup stats|mems_allowed=|memory: usage|Task in \S+ killed/.test(text)) {
    return { type: 'detail', text };
  }

  if (/temperature above threshold/.test(text)) {
    return {
      type: 'event', kind: 'thermal', text, severity: 'warning',
      meaning: 'the host CPU is throttling on temperature',
      action: 'Check the host\'s fans and airflow; a hot chassis slows the input pipeline and heats the GPUs.',
    };
  }
  if (/temperature\/speed normal/.test(text)) {
    return { type: 'event', kind: 'thermal', text, severity: 'info', meaning: 'the host CPU is back to normal temperature' };
  }
  if (/High Temperature/.test(text)) {
    return {
      type: 'event', kind: 'thermal', text, severity: 'warning',
      meaning: 'a network module or cable reports high temperature',
      action: 'Check the cable and the NIC\'s cooling; an overheating link drops GPU-to-GPU traffic.',
    };
  }

  if (/Kernel panic/.test(text)) {
    return { type: 'event', kind: 'host', text, severity: 'critical', meaning: 'the kernel panicked', action: 'The host rebooted or hangs: drain it and read the panic before returning it to service.' };
  }
  if (/soft lockup|Hardware Error|Machine check/.test(text)) {
    return {
      type: 'event', kind: 'host', text, severity: 'error',
      meaning: /lockup/.test(text) ? 'a CPU was stuck in the kernel' : 'the CPU reported a machine check',
      action: 'Drain the host if it repeats; run the vendor\'s hardware diagnostics.',
    };
  }
  if (/blocked for more than \d+ seconds/.test(text)) {
    return { type: 'event', kind: 'host', text, severity: 'warning', meaning: 'a task hung in the kernel', action: 'Check storage and network mounts the job uses.' };
  }
  if (/insufficient power/.test(text)) {
    return { type: 'event', kind: 'host', text, severity: 'warning', meaning: 'a PCIe slot reports insufficient power', action: 'Check the slot\'s power budget and cabling.' };
  }

  const probe = PROBE_FAILED.exec(text);
  if (probe) {
    return { type: 'event', kind: 'other_gpu', text, pciBus: bus(probe[1]!), severity: 'error', meaning: 'the NVIDIA driver could not probe the GPU', action: 'Reboot the host; if the GPU stays missing, reseat or replace it.' };
  }
  const segfault = SEGFAULT_GPU_LIB.exec(text);
  if (segfault) {
    return { type: 'event', kind: 'other_gpu', text, pid: Number(segfault[2]), process: segfault[1]!, severity: 'info', meaning: `a process crashed inside ${segfault[3]}` };
  }
  if (/^nvidia-peermem .*ERROR/.test(text)) {
    return { type: 'event', kind: 'other_gpu', text, severity: 'warning', meaning: 'GPUDirect RDMA (nvidia-peermem) reported an error', action: 'Check the NCCL/RDMA job on this host; restart it if it hangs.' };
  }
  return DROP;
}

function classifyNvrm(text: string): Classified {
  const xid = XID.exec(text);
  if (xid) {
    let rest = xid[5] ?? '';
    let pid: number | undefined;
    let process: string | undefined;
    const pidMatch = PID.exec(rest);
    if (pidMatch) {
      if (pidMatch[1]) pid = Number(pidMatch[1]);
      rest = rest.slice(pidMatch[0].length);
    }
    const nameMatch = NAME.exec(rest);
    if (nameMatch) {
      if (nameMatch[1] && nameMatch[1] !== '<unknown>') process = nameMatch[1];
      rest = rest.slice(nameMatch[0].length);
    }
    const code = Number(xid[4]);
    const event: { -readonly [K in keyof Extract<Classified, { type: 'event' }>]: Extract<Classified, { type: 'event' }>[K] } = {
      type: 'event', kind: 'xid', text, xid: code,
    };
    const pci = bus(xid[1]!);
    if (pci) event.pciBus = pci;
    if (xid[2] !== undefined) {
      event.mig = xid[3] !== undefined
        ? { gpu_instance: Number(xid[2]), compute_instance: Number(xid[3]) }
        : { gpu_instance: Number(xid[2]) };
    }
    if (pid !== undefined) event.pid = pid;
    if (process !== undefined) event.process = process;
    if (code >= 144 && code <= 150) {
      const token = NVLINK5_TOKEN.exec(rest)?.[1];
      if (token) event.severity = token === 'Fatal' ? 'critical' : 'warning';
    }
    if (code === 154) {
      const recovery = RECOVERY.exec(rest);
      if (recovery) {
        const name = recovery[2]!;
        event.action = `Recovery action: ${name} (${recovery[1]}).`;
        event.severity = /reboot/i.test(name) ? 'critical' : /reset/i.test(name) ? 'error' : /none/i.test(name) ? 'info' : 'warning';
      }
    }
    return event;
  }
  const fallen = FALLEN.exec(text) ?? FALLEN_LONG.exec(text);
  if (fallen) {
    return {
      type: 'event', kind: 'fallen_off_bus', text, pciBus: bus(fallen[1]!), severity: 'critical',
      meaning: 'GPU has fallen off the bus',
      action: 'Drain the host and reboot it; open an RMA if the GPU does not come back or falls off again.',
    };
  }
  const gsp = GSP_RATE.exec(text);
  if (gsp) {
    return {
      type: 'event', kind: 'gsp', text, pciBus: bus(gsp[1]!), severity: 'error',
      meaning: 'GSP RPC errors so frequent the driver rate-limits them',
      action: 'The GPU likely needs a reset: drain it and reset it.',
    };
  }
  if (NVRM_DETAIL.test(text)) return { type: 'detail', text };
  if (NVRM_IDENTITY.test(text)) return DROP;
  if (/nvlink/i.test(text)) {
    return { type: 'event', kind: 'nvlink', text, severity: 'warning', meaning: 'the driver reported an NVLink problem', action: 'Check nvidia-smi nvlink -s and -e; a link that fails training needs a reset or a reseat.' };
  }
  if (/row remap/i.test(text)) {
    return { type: 'event', kind: 'row_remap', text, severity: 'warning', meaning: 'GPU memory row remapping', action: 'Reset the GPU at a convenient time to apply the remap.' };
  }
  if (/\bECC\b|double bit|single bit|\bDBE\b|\bSBE\b/i.test(text)) {
    return { type: 'event', kind: 'ecc', text, severity: /double bit|DBE|uncorrect/i.test(text) ? 'critical' : 'warning', meaning: 'GPU memory ECC error' };
  }
  if (/GSP/.test(text)) {
    return { type: 'event', kind: 'gsp', text, severity: 'warning', meaning: 'the GPU System Processor reported a problem' };
  }
  if (/probe routine failed/.test(text)) {
    return { type: 'event', kind: 'other_gpu', text, severity: 'error', meaning: 'the NVIDIA driver failed to initialise a GPU', action: 'Reboot the host; if the GPU stays missing, reseat or replace it.' };
  }
  if (/\b(?:error|fail|failed|timeout|timed out)\b/i.test(text)) {
    return { type: 'event', kind: 'other_gpu', text, severity: 'warning', meaning: 'the NVIDIA driver reported an error' };
  }
  return DROP;
}
