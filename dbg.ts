import { Engine, loadRuleSet, syntheticFleet, emptyEngineState } from '@gpualert/engine';
import { loadXidCatalog } from '@gpualert/rules';
const rs = loadRuleSet(); if (!rs.ok) { console.log(rs.errors); process.exit(1); }
const cat = loadXidCatalog(); if (!cat.ok) throw 1;
const engine = new Engine(rs.value, cat.value);
const state = emptyEngineState();
const t0 = Date.parse('2026-06-01T00:00:00Z');
let n = 0; const alerts = [];
const started = performance.now();
let lastTick = 0;
for (const e of syntheticFleet({ hosts: 8, gpusPerHost: 8, start: t0, minutes: 360 })) {
  const at = Date.parse(e.ts);
  if (at - lastTick >= 10_000) { alerts.push(...engine.tick(state, at)); lastTick = at; }
  alerts.push(...engine.step(state, e)); n++;
}
console.log(n, 'envelopes in', Math.round(performance.now() - started), 'ms');
const counts = new Map();
for (const a of alerts) { const k = `${a.data.status} ${a.data.severity} ${a.data.rule}`; counts.set(k, (counts.get(k) ?? 0) + 1); }
console.log(counts);
for (const a of alerts.slice(0, 8)) console.log(a.ts, a.host, a.data.status, a.data.rule, a.data.summary);
console.log('state bytes per GPU', JSON.stringify(state.hosts).length / 64);
