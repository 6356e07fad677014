import { KernelLogParser } from '@gpualert/kernel-log';
import { loadXidCatalog, type XidCatalog } from '@gpualert/rules';
import { xidFlood, XID_FLOOD_BUSES } from '@gpualert/test-support';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { format, measure } from './harness.ts';

const NOISE = [
  'audit: type=1400 audit(1700000000.123:456): apparmor="STATUS" operation="profile_replace" profile="unconfined" name="snap-update-ns.lxd" pid=1234 comm="apparmor_parser"',
  'IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready',
  'EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Opts: (null). Quota mode: none.',
  'usb 1-1: new high-speed USB device number 2 using xhci_hcd',
  'systemd[1]: Started Journal Service.',
  'mlx5_core 0000:5c:00.0: mlx5e: IPSec ESP acceleration enabled',
  'TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending cookies.',
  'docker0: port 1(veth1a2b3c) entered forwarding state',
  'nfs: server storage01 OK',
  'perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate to 79500',
];

/** Every fixture line of the kernel-log files in a folder (not its subfolders). */
function fixtureLines(folder: string): string[] {
  const dir = new URL(`../test/fixtures/kernel/${folder}`, import.meta.url);
  return readdirSync(dir)
    .filter((f) => /\.(log|txt)$/.test(f) && statSync(new URL(f, dir)).isFile())
    .flatMap((f) =>
      readFileSync(new URL(f, dir), 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== ''),
    );
}

/** The prefixes operators paste (issue 23), each around a noise message: dmesg, journal, syslog, containers. */
function newFormatLine(i: number, uptime: number, message: string): string {
  const second = String(i % 60).padStart(2, '0');
  switch (i % 10) {
    case 0:
      return `[  +0.${String(i % 1000).padStart(6, '0')}] ${message}`;
    case 1:
      return `Nov 30 03:00:${second} kernel: ${message}`;
    case 2:
      return `2026-11-30T03:00:${second}.123456+00:00 gpu-node-07 kernel: ${message}`;
    case 3:
      return `kernel: ${message}`;
    case 4:
      return `2026-11-30T03:00:${second}.123456789Z stdout F [${uptime.toFixed(6).padStart(13)}] ${message}`;
    case 5:
      return JSON.stringify({ log: `${message}\n`, stream: 'stdout', time: `2026-11-30T03:00:${second}.123Z` });
    case 6:
      return JSON.stringify({ __REALTIME_TIMESTAMP: String(1796000000000000 + i), _TRANSPORT: 'kernel', MESSAGE: message });
    case 7:
      return `<4>1 2026-11-30T03:00:${second}.123Z gpu-node-07 kernel - - - ${message}`;
    case 8:
      return `kern  :warn  : [Mon Nov 30 03:00:${second} 2026] ${message}`;
    default:
      return `[${uptime.toFixed(6).padStart(13)}] gpu-node-07 kernel: ${message}`;
  }
}

/** The new formats: every prefix shape, with the host-fault and wild-corpus fixtures' faults mixed in. */
function newFormatsLog(lines: number): string[] {
  const faults = [...fixtureLines(''), ...fixtureLines('host/'), ...fixtureLines('wild/')];
  const out: string[] = [];
  let uptime = 1000;
  for (let i = 0; out.length < lines; i += 1) {
    uptime += 0.0137;
    if (i % 50 === 0) {
      const start = (i * 7) % Math.max(1, faults.length - 20);
      out.push(...faults.slice(start, start + 20));
    } else {
      out.push(newFormatLine(i, uptime, NOISE[i % NOISE.length]!));
    }
  }
  return out.slice(0, lines);
}

/** A realistic log: mostly noise under every prefix, with the fixtures' GPU faults mixed in. */
function realisticLog(lines: number): string[] {
  const faults = fixtureLines('');
  const out: string[] = [];
  let uptime = 1000;
  for (let i = 0; out.length < lines; i += 1) {
    uptime += 0.0137;
    if (i % 50 === 0) {
      // a burst of faults: 20 consecutive fixture lines
      const start = (i * 7) % Math.max(1, faults.length - 20);
      out.push(...faults.slice(start, start + 20));
    } else {
      const message = NOISE[i % NOISE.length]!;
      const prefix =
        i % 3 === 0
          ? `[${uptime.toFixed(6).padStart(13)}] `
          : i % 3 === 1
            ? `Nov 30 03:00:${String(i % 60).padStart(2, '0')} gpu-node-07 kernel: `
            : `6,${i},${Math.round(uptime * 1e6)},-;`;
      out.push(prefix + message);
    }
  }
  return out.slice(0, lines);
}

export async function benchKernel(): Promise<void> {
  console.log('\n## Kernel log parser (realistic mix: ~70% noise, GPU fault bursts)');
  const catalog = loadXidCatalog();
  if (!catalog.ok) throw new Error('catalog');
  const lines = realisticLog(200_000);
  let events = 0;
  await measure('kernel parser, one core', 'lines/s', 7, () => {
    const parser = new KernelLogParser({ catalog: catalog.value, referenceYear: 2026 });
    const now = Date.now();
    for (const line of lines) events += parser.push(line, now).length;
    events += parser.flush().length;
    return lines.length;
  });
  const noiseOnly = lines.filter((l) => NOISE.some((n) => l.endsWith(n)));
  await measure('kernel parser, noise lines only', 'lines/s', 7, () => {
    const parser = new KernelLogParser({ catalog: catalog.value, referenceYear: 2026 });
    for (const line of noiseOnly) parser.push(line, 0);
    return noiseOnly.length;
  });
  const mixed = newFormatsLog(200_000);
  let mixedEvents = 0;
  await measure('kernel parser, new formats (every prefix shape, host faults, wild corpus)', 'lines/s', 7, () => {
    const parser = new KernelLogParser({ catalog: catalog.value, referenceYear: 2026 });
    const now = Date.now();
    for (const line of mixed) mixedEvents += parser.push(line, now).length;
    mixedEvents += parser.flush().length;
    return mixed.length;
  });
  if (events === 0 || mixedEvents === 0) throw new Error('the benchmark produced no events');
  await benchFlood(catalog.value);
  await benchAdversarial(catalog.value);
}

/**
 * NVSentinel's flood (issue 31): 800,000 lines of Xid 95, 29 distinct, here over an hour on two
 * GPUs. Folded into one episode per GPU and code: about one event a minute per GPU.
 */
/** `npm run bench kernel-flood`: the flood alone. */
export async function benchKernelFlood(): Promise<void> {
  const catalog = loadXidCatalog();
  if (!catalog.ok) throw new Error('catalog');
  await benchFlood(catalog.value);
}

async function benchFlood(catalog: XidCatalog): Promise<void> {
  const start = Date.UTC(2026, 2, 1, 10);
  const lines = xidFlood({ lines: 800_000, startMs: start, spacingMs: 3_600_000 / 800_000 });
  const gpus = new Map<string, number>(XID_FLOOD_BUSES.map((bus, i) => [bus, i]));
  let told = 0;
  await measure('kernel parser, Xid 95 flood (800,000 lines, 29 distinct)', 'lines/s', 5, () => {
    const parser = new KernelLogParser({ catalog, gpuIndexByPci: gpus });
    const arrival = start + 7_200_000;
    told = 0;
    for (let i = 0; i < lines.length; i += 1) told += parser.push(lines[i]!, arrival, i).length;
    told += parser.flush().length;
    return lines.length;
  });
  console.log(`  the flood became ${told} events (one episode per GPU, about one event a minute each)`);
  // What this machine gives a loop that only reads each line's characters: the ceiling to compare with.
  await measure('  for scale: a bare scan of the same lines (charCodeAt)', 'lines/s', 5, () => {
    let sum = 0;
    for (const line of lines) for (let i = 0; i < line.length; i += 1) sum += line.charCodeAt(i);
    return sum > 0 ? lines.length : 0;
  });
}

/**
 * Hostile lines (the attack on the kernel parser and the audit after it): one token repeated into
 * a kmsg-sized (1 KiB) or journald-sized (48 KiB) line. Linear patterns keep these within a small
 * factor of noise; the quadratic "Oops" pattern took 28 s for 100k 1 KiB lines. The worst token is printed.
 */
async function benchAdversarial(catalog: XidCatalog): Promise<void> {
  const oops = 'kernel: ' + 'Oops '.repeat(200);
  await measure('kernel parser, adversarial 1 KiB "Oops " lines', 'lines/s', 3, () => {
    const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
    for (let i = 0; i < 20_000; i += 1) parser.push(oops, 0);
    return 20_000;
  });
  const tokens: [prefix: string, token: string][] = [
    ['kernel: ', 'Oops '],
    ['kernel: ', 'Oops [#'],
    ['kernel: ', 'Killed process 1 ('],
    ['rcu: ', 'rcu_'],
    ['kernel: ', 'rcu: INFO: '],
    ['NVRM: The NVIDIA GPU ', '0:'],
    ['[ 1.0] ', ' '],
    ['pcieport 0000:00:1c.5: AER: ', 'Fatal '],
    ['kernel: ', 'AER: Corrected '],
    ['NVRM: Xid (PCI:0000:18:00): 154, pid=1, ', 'to 0x1 ('],
    ['kernel: ', 'NVRM: Xid (PCI:0000:18:00): 79, '],
    ['kernel: ', 'BUG: '],
    ['kernel: ', 'mce: '],
    ['kernel: ', 'oom-kill:'],
    ['kernel: ', 'insufficient power '],
    ['kernel: ', 'pcieport 0000:00:01.0: '],
  ];
  let worst: [string, number] = ['', Infinity];
  for (const [prefix, token] of tokens) {
    const line = prefix + token.repeat(Math.ceil(48_000 / token.length)) + 'x';
    const rate = await measure(`  adversarial 48 KiB line of ${JSON.stringify(token)}`, 'lines/s', 3, () => {
      const parser = new KernelLogParser({ catalog, referenceYear: 2026 });
      for (let i = 0; i < 50; i += 1) parser.push(line, 0);
      parser.flush();
      return 50;
    });
    if (rate < worst[1]) worst = [token, rate];
  }
  console.log(`kernel parser, adversarial 48 KiB lines: worst ${JSON.stringify(worst[0])} at ${format(worst[1])} lines/s`);
}
