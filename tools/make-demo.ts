// Writes demo/incident.jsonl, the recording `gpualert up --demo` plays: deterministic, so the
// file only changes when this script does. Run: npx tsx tools/make-demo.ts
import { writeFileSync } from 'node:fs';
import { hostName, syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, stableId, type Envelope } from '@gpualert/schema';

const T0 = Date.parse('2026-06-01T02:00:00Z');
const MIN = 60_000;
const at = (minutes: number) => T0 + minutes * MIN;

const fleet = [
  ...syntheticFleet({
    hosts: 3,
    gpusPerHost: 8,
    start: T0,
    minutes: 30,
    seed: 2026,
    cluster: 'demo',
    fault: (h, gpu, t) => {
      // Everyone trains; host 1's GPU 5 slowly drifts 14 °C above its siblings (still under 87 °C).
      const g = { ...gpu, util_pct: 95 + (gpu.index % 4), processes: 1, pcie_gen: 5, temp_c: 58 + (gpu.index % 4), power_w: 615 + gpu.index * 3 };
      if (h === 1 && gpu.index === 5 && t >= at(6)) return { ...g, temp_c: 60 + Math.min(14, ((t - at(6)) / MIN) * 1.5) };
      // Host 2 loses GPU 3 at minute 18.
      if (h === 2 && gpu.index === 3 && t >= at(18)) return null;
      return g;
    },
  }),
].map((e) => ({ ...e, labels: { cluster: 'demo', job: 'llm-pretrain' } }) as Envelope);

const line = (host: string, t: number, text: string): Envelope =>
  newEnvelope({
    type: 'kernel.line',
    id: stableId('demo', host, t, text),
    host,
    source: 'collector-kernel/demo',
    ts: new Date(t).toISOString(),
    labels: { cluster: 'demo', job: 'llm-pretrain' },
    data: { line: text },
  });

const story: Envelope[] = [
  // A provider maintenance notice for host 0, an hour ahead.
  newEnvelope({
    type: 'provider.raw',
    id: 'demo-gcp-notice',
    host: hostName(0),
    source: 'collector-provider/demo',
    ts: new Date(at(3)).toISOString(),
    labels: { cluster: 'demo' },
    data: {
      provider: 'gcp',
      payload: {
        maintenance_status: 'PENDING',
        type: 'SCHEDULED',
        window_start_time: new Date(at(60)).toISOString(),
        window_end_time: new Date(at(90)).toISOString(),
        maintenance_reasons: ['PLANNED_UPDATE'],
      },
    },
  }),
  // An application Xid 13 on host 0, GPU 2: three lines of one fault.
  ...[0, 1, 2].map((i) =>
    line(
      hostName(0),
      at(9) + i,
      `[ 88213.41${i}000] NVRM: Xid (PCI:0000:3a:00): 13, pid=48112, name=python3, Graphics SM Warp Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address`,
    ),
  ),
  // Host 2: a GSP timeout, then GPU 3 falls off the bus.
  line(
    hostName(2),
    at(17.5),
    '[120311.208114] NVRM: Xid (PCI:0000:4b:00): 119, pid=1290, name=python3, Timeout after 6s of waiting for RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20803032 0x58c).',
  ),
  line(hostName(2), at(18) - 200, "[120341.548779] NVRM: Xid (PCI:0000:4b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
  line(hostName(2), at(18) - 199, '[120341.548783] NVRM: GPU 0000:4b:00.0: GPU has fallen off the bus.'),
];

const all = [...fleet, ...story].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
writeFileSync(new URL('../demo/incident.jsonl', import.meta.url), `${all.map((e) => JSON.stringify(e)).join('\n')}\n`);
console.log(`demo/incident.jsonl: ${all.length} envelopes`);
