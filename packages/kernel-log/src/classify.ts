import { canonicalPciBus, must, type Severity } from '@gpualert/schema';
import type { Classified, ClassifiedEvent } from './classified.ts';
import { classifyHost } from './classify-host.ts';

export type { Classified, ClassifiedEvent } from './classified.ts';

const DROP: Classified = { type: 'drop' };

/**
 * Cheap first test: a line with none of these is not about a GPU or the host's health. Most
 * words open the message (tested anchored, which is cheap); the few that come after a device's
 * name or a process's are searched for. Every line pays this test, so it stays short.
 */
const INTERESTING_HEAD =
  /^\s*(?:NVRM|nvidia|pcieport|EDAC|mce: |BUG: |Oops|INFO: |watchdog: |NMI |Kernel |Internal error: Oops|general protection|rcu|Memory (?:failure|cgroup)|Uncorrected|Uhhuh|Dazed|\{\d+\}\[|\[Hardware|Call Trace|Code: |RIP: |R[A-Z0-9]{2}: |[CDEFG]S: |CR[0-4]: |DR[0-7]: |PGD |Workqueue: |CPU: \d|Hardware name|Modules linked|Tainted: |#PF: |---\[ end|<\/?(?:TASK|IRQ|NMI)>|Task in|memory: usage|Out of memory|Kill|oom|WARNING: kernel stack|unwind stack|"echo 0|\?? ?[\w.]+\+0x)/;
const INTERESTING_ANYWHERE = /AER|PCIe|NVRM|segfault|emperature|insufficient power|oom|error status|TLP Header/;

function interesting(text: string): boolean {
  return INTERESTING_HEAD.test(text) || INTERESTING_ANYWHERE.test(text);
}

const XID = /^NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{2,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)(?: GPU-I:(\d+))?(?: GPU-CI:(\d+))?\): (\d+)(?:,\s*(.*))?$/;
const PID = /^pid=(?:'?<unknown>'?|(\d+)),\s*/;
const NAME = /^name=([^,]*),?\s*/;
const NVLINK5_TOKEN = /\b(Fatal|Nonfatal)\b/;
const RECOVERY = /to (0x[0-9a-fA-F]{1,16}) \(([^)]{1,64})\)/;
const SXID = /^nvidia-nvswitch(\d+): SXid \(PCI:([0-9A-Fa-f:.]+)\): (\d+), (.*)$/;
const FALLEN = /^NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus/;
const FALLEN_OLD = /^NVRM: GPU at (?:PCI:)?([0-9A-Fa-f:.]+) has fallen off the bus/;
const RM_INIT =
  /^NVRM: (?:GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?): )?(?:RmInitAdapter failed|rm_init_adapter failed|nvidia_frontend_open: minor \d+, module->open\(\) failed)/;
const MINOR = /minor(?: number)? (\d+)/;
const GPU_NOTICE = /^NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)/;
const PROBE_NOT_CALLED = /^NVRM: The NVIDIA probe routine was not called for (\d+) device/;
const NVRM_ADDRESS = /(?:\bGPU (?:at )?(?:PCI:)?|\(PCI:)([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\b/;
/** The lines after the first of the driver's multi-line notices, when each comes with its own prefix. */
const NVRM_NOTICE_TAIL =
  /^NVRM: (?:This can occur when|nouveau, rivafb|was loaded and obtained|Try unloading the conflicting|reconfigure your kernel|driver\(s\)\), then try|again\.|None of the NVIDIA devices|installed in this system|NVIDIA \S+ driver release|Please see|in this release's README|specific graphics driver|\(PCI ID: |fallen off the bus and|bound to nouveau|The NVIDIA kernel module)/;
const FALLEN_LONG = /^NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]{1,16})\b.*fallen off the bus/;
const PROBE_FAILED = /^nvidia: probe of ([0-9A-Fa-f:.]+) failed/;
const GSP_RATE = /^NVRM: Rate limiting GSP RPC error prints for GPU at (?:PCI:)?([0-9A-Fa-f:.]+)/;
const NVRM_DETAIL =
  /^NVRM: (?:GPU\d+ (?:GSP RPC buffer|RPC history|RPC event history)|\s+(?:entry|-?\d+)\s|GPU [0-9A-Fa-f:.]+: GPU serial number|A GPU crash dump|nvidia-bug-report|the NVIDIA kernel module)/;
const NVRM_IDENTITY = /^NVRM: (?:GPU at PCI:|GPU Board Serial Number|loading NVIDIA|nvidia-modeset)/;
const AER_ERROR = /^(?:(\S+) )?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): (?:AER: )?PCIe Bus Error: severity=([^,]+)/;
const AER_RECEIVED =
  /(Multiple )?((?:Un)?[Cc]orrect(?:ed|able)(?: \((?:Non-)?Fatal\))?|Fatal|Non-Fatal)[^:]{0,40}?errors? (?:message )?received(?::| from) (?:([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)|id=[0-9a-fA-F]{4})/;
const AER_REPORTER = /^(\S+) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): /;
const DPC = /^(?:pcieport )?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): DPC: containment event/;
const AER_DETAIL =
  /(?:device \[[0-9a-f]{4}:[0-9a-f]{4}\] error status|TLP Header|^\S+ [0-9a-f:.]+:\s+(?:AER:\s+)?\[\s*\d+\]\s+\S+\s+\(|^[0-9a-f:.]+:\s+\[\s*\d+\])/;
const BANDWIDTH = /^(\S+) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d): .*available PCIe bandwidth, limited by/;
const OOM_KILLED = /(?:Killed process|Kill process) (\d{1,10})(?:, UID \d{1,10},)? \(([^)]{1,64})\)/;
const PEERMEM_INVALID_CONTEXT = /^nvidia-peermem .*invalid context/;
const SEGFAULT_GPU_LIB = /^(\S+)\[(\d+)\]: segfault at .* in (libcuda|libnccl|libcudart|libcublas|libnvidia)/;
const STACK =
  /^(?:CPU: \d+ (?:UID: \d+ )?PID: \d+|Hardware name:|Call Trace:|<\/?(?:TASK|IRQ|NMI)>|\??\s*[\w.]+\+0x[0-9a-f]+\/0x[0-9a-f]+|WARNING: kernel stack frame pointer|unwind stack type|Kernel Offset:|RIP:|Code:|RSP:|R[A-Z0-9]{2}:|Modules linked in:|---\[ end (?:trace|Kernel panic)|Tainted:|"echo 0 > \/proc\/sys\/kernel\/hung_task_timeout_secs"|task:\S+\s+state:|PGD [0-9a-f]+ |CR2: |FS: |CS: |DR[0-7]: |Workqueue: |#PF: )/;

/** The canonical PCI address a match named; undefined where it named none. */
function bus(raw: string | undefined): string | undefined {
  return raw === undefined ? undefined : (canonicalPciBus(raw) ?? undefined);
}

/** Decides what one complete message (continuations joined) is; pure and allocation-light. */
export function classify(text: string): Classified {
  if (!interesting(text)) return DROP;
  if (text.startsWith('NVRM: ')) return withGpuIndexFamily(classifyNvrm(text), text);
  // A few driver functions print "NVRM func: …" without the colon.
  if (text.startsWith('NVRM ')) {
    const result = withGpuIndexFamily(classifyNvrm(`NVRM: ${text.slice(5)}`), text);
    return result.type === 'drop' ? result : { ...result, text };
  }
  if (STACK.test(text.trimStart())) return { type: 'detail', text };

  const sxid = SXID.exec(text);
  if (sxid) {
    const rest = must(sxid[4], 'SXID has no optional group');
    const fatal = /^Fatal\b/i.test(rest);
    const nonfatal = /^Non-?fatal\b/i.test(rest);
    // One SXid prints a header (Fatal/Non-fatal) and its Data/Severity lines: one family per switch.
    // A Data line whose header the paste cut off still reports that switch's SXid.
    return {
      type: 'event',
      kind: 'sxid',
      text,
      pciBus: bus(sxid[2]),
      xid: Number(sxid[3]),
      family: `sxid:${must(sxid[2], 'SXID has no optional group').toLowerCase()}`,
      counts: fatal || nonfatal,
      severity: fatal ? 'critical' : 'warning',
      meaning: `NVSwitch ${fatal ? 'fatal' : nonfatal ? 'non-fatal' : ''} error (nvswitch${sxid[1]})`.replace('  ', ' '),
      action: fatal
        ? 'Drain the NVSwitch system; a fatal SXid needs the GPUs and switches reset (Fabric Manager) or a reboot.'
        : 'Watch the link; non-fatal SXids that repeat point at a cable or switch port.',
    };
  }

  const aer = AER_ERROR.exec(text);
  if (aer) {
    const reported = must(aer[3], "AER_ERROR's severity is not optional");
    const severity = /fatal\)?$/i.test(reported) && !/non-fatal/i.test(reported) ? 'critical' : /uncorrect/i.test(reported) ? 'error' : 'warning';
    const address = must(aer[2], "AER_ERROR's address is not optional").toLowerCase();
    // A switch or root port's own uncorrected error takes down the link to everything below it.
    if (aer[1] === 'pcieport') return portEvent(text, address, severity, reported.trim());
    return {
      type: 'event',
      kind: 'pcie_aer',
      text,
      pciBus: bus(aer[2]),
      severity,
      needsGpu: aer[1] !== 'nvidia',
      address,
      family: `aer:${address}`,
      meaning: `PCIe ${reported.trim()} error on the GPU's link`,
      action:
        severity === 'warning'
          ? 'Corrected errors are retried by the link; a steady rate means a bad riser, slot or cable.'
          : 'Drain the GPU; an uncorrected PCIe error often precedes the GPU falling off the bus. Reseat or replace the riser.',
    };
  }
  const received = AER_RECEIVED.exec(text);
  if (received && /AER/.test(text)) {
    const kind = must(received[2], "AER_RECEIVED's kind is not optional");
    const severity = /Fatal/.test(kind) && !/Non-Fatal/.test(kind) ? 'critical' : /Uncorrect|Non-Fatal/.test(kind) ? 'error' : 'warning';
    const reporter = AER_REPORTER.exec(text);
    const port = reporter?.[1] === 'pcieport' ? reporter[2]?.toLowerCase() : undefined;
    // The old form names no address (`id=0010`) and AMD ports name 0000:00:00.0: both are the port's own report.
    const source = received[3] === undefined || received[3] === '0000:00:00.0' ? port : received[3].toLowerCase();
    if (port !== undefined && source === port) return portEvent(text, port, severity, kind);
    if (source === undefined) return DROP;
    return {
      type: 'event',
      kind: 'pcie_aer',
      text,
      pciBus: bus(source),
      severity,
      needsGpu: true,
      address: source,
      family: severity === 'warning' ? undefined : `aer:${source}`,
      meaning: `PCIe ${kind.toLowerCase()} error on the GPU's link`,
      action: 'Corrected errors are retried by the link; a steady rate means a bad riser, slot or cable.',
    };
  }
  const dpc = DPC.exec(text);
  if (dpc) return portEvent(text, must(dpc[1], "DPC's address is not optional").toLowerCase(), 'error', 'downstream port containment');
  if (AER_DETAIL.test(text) || /: DPC: /.test(text)) return { type: 'detail', text };

  const bandwidth = BANDWIDTH.exec(text);
  if (bandwidth) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: bus(bandwidth[2]),
      severity: 'warning',
      needsGpu: bandwidth[1] !== 'nvidia',
      meaning: 'PCIe link trained below its capability at boot',
      action: 'Check the slot, riser and BIOS PCIe settings; the GPU gets a fraction of its host bandwidth.',
    };
  }

  const oom = OOM_KILLED.exec(text);
  if (oom) {
    // The old two-line report ("Kill process N … or sacrifice child", then "Killed process N") is one kill.
    return {
      type: 'event',
      kind: 'oom_kill',
      text,
      pid: Number(oom[1]),
      process: must(oom[2], "OOM_KILLED's name is not optional"),
      severity: 'warning',
      family: `oom:${oom[1]}`,
      meaning: 'the kernel killed a process for lack of memory',
      action: 'Give the job more host memory or lower its batch size; check its cgroup limit.',
    };
  }
  if (/invoked oom-killer|oom-kill:constraint|oom_reaper|Memory cgroup stats|mems_allowed=|memory: usage|Task in \S+ killed/.test(text)) {
    return { type: 'detail', text };
  }

  if (/temperature above threshold/.test(text)) {
    return {
      type: 'event',
      kind: 'thermal',
      text,
      severity: 'warning',
      meaning: 'the host CPU is throttling on temperature',
      action: "Check the host's fans and airflow; a hot chassis slows the input pipeline and heats the GPUs.",
    };
  }
  if (/temperature\/speed normal/.test(text)) {
    return { type: 'event', kind: 'thermal', text, severity: 'info', meaning: 'the host CPU is back to normal temperature' };
  }
  if (/High Temperature/.test(text)) {
    return {
      type: 'event',
      kind: 'thermal',
      text,
      severity: 'warning',
      meaning: 'a network module or cable reports high temperature',
      action: "Check the cable and the NIC's cooling; an overheating link drops GPU-to-GPU traffic.",
    };
  }

  const host = classifyHost(text);
  if (host) return host;
  if (/insufficient power/.test(text)) {
    return {
      type: 'event',
      kind: 'host',
      hostFault: 'power',
      text,
      severity: 'warning',
      meaning: 'a PCIe slot reports insufficient power',
      action: "Check the slot's power budget and cabling.",
    };
  }

  const probe = PROBE_FAILED.exec(text);
  if (probe) {
    // Right after the driver's notice about the same GPU (not supported, …) it is that notice's end.
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: bus(probe[1]),
      severity: 'error',
      family: 'gpu_notice',
      meaning: 'the NVIDIA driver could not probe the GPU',
      action: 'Reboot the host; if the GPU stays missing, reseat or replace it.',
    };
  }
  const segfault = SEGFAULT_GPU_LIB.exec(text);
  if (segfault) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pid: Number(segfault[2]),
      process: must(segfault[1], "SEGFAULT_GPU_LIB's process is not optional"),
      severity: 'info',
      meaning: `a process crashed inside ${segfault[3]}`,
    };
  }
  // nvidia-peermem warns "invalid context" whenever an RDMA registration outlives its CUDA context: harmless.
  if (PEERMEM_INVALID_CONTEXT.test(text)) return DROP;
  if (/^nvidia-peermem .*ERROR/.test(text)) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      severity: 'warning',
      meaning: 'GPUDirect RDMA (nvidia-peermem) reported an error',
      action: 'Check the NCCL/RDMA job on this host; restart it if it hangs.',
    };
  }
  return DROP;
}

/**
 * "NVRM: GPU6 …": the driver's own GPU index, no address. Its lines of one report (a GSP timeout,
 * the memory-subsystem error after it) are one family, so they read as one event per GPU.
 */
function withGpuIndexFamily(result: Classified, text: string): Classified {
  if (result.type !== 'event' || (result.family !== undefined && result.family !== 'nvrm_error') || result.pciBus !== undefined) return result;
  const index = /^NVRM:? GPU(\d+) /.exec(text)?.[1];
  return index === undefined ? result : { ...result, family: `nvrm:GPU${index}` };
}

/** A PCIe switch or root port's own error. */
export function portEvent(text: string, address: string, severity: Severity, what: string): ClassifiedEvent {
  return {
    type: 'event',
    kind: 'pcie_aer',
    text,
    port: address,
    severity,
    family: `port:${address}`,
    meaning: `PCIe ${what} error on the port ${address} (a switch or root port): the link to everything below it is at risk`,
    action: 'Drain the GPUs below this port; reseat or replace the riser, cable or switch board. The GPUs often fall off the bus (Xid 79) next.',
  };
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
      type: 'event',
      kind: 'xid',
      text,
      xid: code,
    };
    const pci = bus(xid[1]);
    if (pci) event.pciBus = pci;
    if (xid[2] !== undefined) {
      event.mig = xid[3] !== undefined ? { gpu_instance: Number(xid[2]), compute_instance: Number(xid[3]) } : { gpu_instance: Number(xid[2]) };
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
        const name = must(recovery[2], "RECOVERY's name is not optional");
        event.action = `Recovery action: ${name} (${recovery[1]}).`;
        event.severity = /reboot/i.test(name) ? 'critical' : /reset/i.test(name) ? 'error' : /none/i.test(name) ? 'info' : 'warning';
      }
    }
    return event;
  }
  const fallen = FALLEN.exec(text) ?? FALLEN_LONG.exec(text) ?? FALLEN_OLD.exec(text);
  if (fallen) {
    return {
      type: 'event',
      kind: 'fallen_off_bus',
      text,
      pciBus: bus(fallen[1]),
      severity: 'critical',
      meaning: 'GPU has fallen off the bus',
      action: 'Drain the host and reboot it; open an RMA if the GPU does not come back or falls off again.',
    };
  }
  const gsp = GSP_RATE.exec(text);
  if (gsp) {
    return {
      type: 'event',
      kind: 'gsp',
      text,
      pciBus: bus(gsp[1]),
      severity: 'error',
      meaning: 'GSP RPC errors so frequent the driver rate-limits them',
      action: 'The GPU likely needs a reset: drain it and reset it.',
    };
  }
  const rmInit = RM_INIT.exec(text);
  if (rmInit) {
    // "RmInitAdapter failed!" then "rm_init_adapter failed, device minor number N": one failed start of one GPU.
    const minor = MINOR.exec(text)?.[1];
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: rmInit[1] ? bus(rmInit[1]) : undefined,
      severity: 'error',
      family: 'rm_init',
      minor: minor === undefined ? undefined : Number(minor),
      meaning: `the NVIDIA driver could not initialise the GPU (RmInitAdapter failed${minor !== undefined ? `, minor number ${minor}` : ''})`,
      action: "Check the driver and firmware versions and the GPU's power; reboot, and if the GPU still fails to start, reseat or replace it.",
    };
  }
  const notice = GPU_NOTICE.exec(text);
  if (notice) {
    const unsupported = /not supported/.test(text);
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: bus(notice[1]),
      severity: 'error',
      family: 'gpu_notice',
      meaning: unsupported ? 'the installed NVIDIA driver does not support this GPU' : 'the NVIDIA driver cannot use this GPU',
      action: unsupported
        ? 'Install a driver branch that supports this GPU (or the legacy branch it needs).'
        : "Read the driver's message that follows; reboot, and reseat the GPU if it persists.",
    };
  }
  if (/^NVRM: No NVIDIA (?:graphics adapter|devices) probed/.test(text)) {
    // The end of the "probe routine was not called" notice, or all that is left of it
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      severity: 'error',
      family: 'probe_not_called',
      meaning: 'the NVIDIA driver found no GPU it could use',
      action: 'Check that another driver (nouveau, vfio-pci) does not own the GPU, and that it is seated and powered.',
    };
  }
  const notCalled = PROBE_NOT_CALLED.exec(text);
  if (notCalled) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      severity: 'error',
      family: 'probe_not_called',
      counts: true,
      meaning: `the NVIDIA driver was not given ${notCalled[1]} GPU(s): another driver (nouveau, vfio-pci…) owns them`,
      action: 'Unload or blacklist the conflicting driver (nouveau) and load the NVIDIA module again.',
    };
  }
  if (NVRM_NOTICE_TAIL.test(text)) return { type: 'detail', text };
  if (NVRM_DETAIL.test(text)) return { type: 'detail', text };
  if (NVRM_IDENTITY.test(text)) return DROP;
  if (/nvlink/i.test(text)) {
    return {
      type: 'event',
      kind: 'nvlink',
      text,
      severity: 'warning',
      meaning: 'the driver reported an NVLink problem',
      action: 'Check nvidia-smi nvlink -s and -e; a link that fails training needs a reset or a reseat.',
    };
  }
  if (/row remap/i.test(text)) {
    return {
      type: 'event',
      kind: 'row_remap',
      text,
      severity: 'warning',
      meaning: 'GPU memory row remapping',
      action: 'Reset the GPU at a convenient time to apply the remap.',
    };
  }
  if (/\bECC\b|double bit|single bit|\bDBE\b|\bSBE\b/i.test(text)) {
    return { type: 'event', kind: 'ecc', text, severity: /double bit|DBE|uncorrect/i.test(text) ? 'critical' : 'warning', meaning: 'GPU memory ECC error' };
  }
  if (/GfwBoot|GFW_BOOT|GFW boot/.test(text)) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      severity: 'error',
      family: 'gfw_boot',
      meaning: "the GPU's firmware (VBIOS) did not finish booting",
      action: 'Power-cycle the host (a warm reboot may not reset the GPU); reseat or replace the GPU if it persists.',
    };
  }
  if (/GSP|kgsp/.test(text) || (/^NVRM: GPU\d+ /.test(text) && /timeout|timed out/i.test(text))) {
    const address = NVRM_ADDRESS.exec(text)?.[1];
    return {
      type: 'event',
      kind: 'gsp',
      text,
      pciBus: address ? bus(address) : undefined,
      severity: 'warning',
      meaning: 'the GPU System Processor reported a problem',
    };
  }
  if (/I\/O region assigned to your NVIDIA device is invalid/.test(text)) {
    const address = NVRM_ADDRESS.exec(text)?.[1];
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: address ? bus(address) : undefined,
      severity: 'error',
      meaning: "the GPU's PCI memory region (BAR) is invalid: the driver cannot reach it",
      action: 'Check the BIOS settings (Above 4G decoding, resizable BAR) and the slot; the GPU is unusable until fixed.',
    };
  }
  if (/probe routine failed/.test(text)) {
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      severity: 'error',
      meaning: 'the NVIDIA driver failed to initialise a GPU',
      action: 'Reboot the host; if the GPU stays missing, reseat or replace it.',
    };
  }
  if (/\b(?:error|fail|failed|timeout|timed out)\b/i.test(text)) {
    const address = NVRM_ADDRESS.exec(text)?.[1];
    return {
      type: 'event',
      kind: 'other_gpu',
      text,
      pciBus: address ? bus(address) : undefined,
      severity: 'warning',
      family: 'nvrm_error',
      meaning: 'the NVIDIA driver reported an error',
    };
  }
  return DROP;
}
