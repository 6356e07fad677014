// Writes demo/cooling.jsonl, the recording `gpualert up --demo --demo-recording cooling` plays and
// the host layer's tests judge: synthetic (made here, not captured), deterministic.
// Run: npx tsx tools/make-cooling-demo.ts
//
// Two hosts train for 60 minutes, their BMCs read every 30 s (six chassis fans, inlet and exhaust
// air, two PSUs). At minute 25 fan "FAN3" of gpu-node-000 stops (0 rpm, health critical); GPUs 2 and
// 3, behind it, warm up by about 3 °C a minute to the high 80s. At minute 45 the fan is replaced;
// the GPUs cool down. The inlet air stays where it always is. One incident, root cause cooling.
import { writeFileSync } from 'node:fs';
import { hostName, random, syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, stableId, type Envelope, type HostSampleData } from '@gpualert/schema';

const T0 = Date.parse('2026-06-02T03:00:00Z');
const MIN = 60_000;
const at = (minutes: number) => T0 + minutes * MIN;
const FAILS = at(25);
const REPLACED = at(45);
const LABELS = { cluster: 'demo', job: 'llm-pretrain' };

/** How much warmer a GPU behind the dead fan is at `t` (°C). */
function heat(t: number): number {
  if (t < FAILS) return 0;
  const up = Math.min(28, ((Math.min(t, REPLACED) - FAILS) / MIN) * 3);
  return t < REPLACED ? up : Math.max(0, up - ((t - REPLACED) / MIN) * 6);
}

const fleet = [
  ...syntheticFleet({
    hosts: 2,
    gpusPerHost: 4,
    start: T0,
    minutes: 60,
    seed: 2027,
    cluster: 'demo',
    fault: (h, gpu, t) => {
      const g = {
        ...gpu,
        util_pct: 95 + (gpu.index % 4),
        processes: 1,
        pcie_gen: 5,
        temp_c: 60 + (gpu.index % 2),
        power_w: 615 + gpu.index * 3,
        throttle: ['sw_power_cap' as const],
      };
      if (h === 0 && (gpu.index === 2 || gpu.index === 3)) return { ...g, temp_c: g.temp_c + heat(t) };
      return g;
    },
  }),
].map((e) => ({ ...e, labels: LABELS }) as Envelope);

const rand = random(99);
const bmc: Envelope[] = [];
for (let t = T0 + 5_000; t < at(60); t += 30_000) {
  for (const h of [0, 1]) {
    const dead = h === 0 && t >= FAILS && t < REPLACED;
    const data: HostSampleData = {
      origin: 'redfish',
      fans: Array.from({ length: 6 }, (_, i) => {
        const name = `FAN${i + 1}`;
        if (dead && i === 2) return { name, rpm: 0, percent: 0, health: 'critical' as const };
        // The BMC spins the others up as the GPUs warm.
        const rpm = Math.round(9_000 + rand() * 400 + (h === 0 ? heat(t) * 60 : 0));
        return { name, rpm, percent: Math.round(rpm / 160), health: 'ok' as const };
      }),
      temperatures: [
        { name: 'Inlet Temp', celsius: Math.round((22.5 + rand() * 1.5) * 10) / 10, location: 'inlet', health: 'ok' },
        { name: 'Exhaust Temp', celsius: Math.round((41 + rand() * 2 + (h === 0 ? heat(t) / 3 : 0)) * 10) / 10, location: 'exhaust', health: 'ok' },
      ],
      psus: [1, 2].map((i) => ({ name: `PSU${i}`, health: 'ok' as const, watts: Math.round(1_700 + rand() * 100), state: 'enabled' as const })),
      fan_redundancy: [{ name: 'Fan Redundancy', state: dead ? 'lost' : 'full', health: dead ? 'warning' : 'ok' }],
      psu_redundancy: [{ name: 'PSU Redundancy', state: 'full', health: 'ok' }],
      system_health: dead ? 'critical' : 'ok',
    };
    bmc.push(
      newEnvelope({
        type: 'host.sample',
        id: stableId('cooling-demo', h, t),
        host: hostName(h),
        source: 'collector-bmc/demo',
        ts: new Date(t).toISOString(),
        labels: LABELS,
        data,
      }),
    );
  }
}
// The BMC's log entry for the fan, once (its severity below the SEL rule's: the fan rule says it).
bmc.push(
  newEnvelope({
    type: 'bmc.event',
    id: 'cooling-demo-sel-1',
    host: hostName(0),
    source: 'collector-bmc/demo',
    ts: new Date(FAILS + 7_000).toISOString(),
    labels: LABELS,
    data: {
      entry_id: '42',
      log: '/redfish/v1/Managers/1/LogServices/SEL',
      created: new Date(FAILS + 2_000).toISOString(),
      severity: 'warning',
      message: 'Fan FAN3 lower critical going low',
      sensor: 'FAN3',
      asserted: true,
    },
  }),
);

const all = [...fleet, ...bmc].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
writeFileSync(new URL('../demo/cooling.jsonl', import.meta.url), `${all.map((e) => JSON.stringify(e)).join('\n')}\n`);
console.log(`demo/cooling.jsonl: ${all.length} envelopes`);
