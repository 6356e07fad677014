import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { emptyEngineState, Engine, ENGINE_SOURCE, loadRuleSet, StreamClock } from '@gpualert/engine';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { printAlerts } from './alert-printer.ts';
import { DEMO_RECORDINGS } from './demo-feeder.ts';

/** The alert lines `up` prints for `alerts`, published as the engine publishes them. */
async function printed(alerts: readonly EnvelopeOf<'alert'>[]): Promise<string[]> {
  const bus = new MemoryBus({ partitions: 1 });
  let out = '';
  const sink = new Writable({
    write(chunk, _e, done) {
      out += String(chunk);
      done();
    },
  });
  const printer = await printAlerts(bus, sink);
  await bus.publish(
    TOPICS.alerts,
    alerts.map((a) => envelopeMessage(a)),
  );
  const deadline = Date.now() + 5_000;
  const lines = () => out.split('\n').filter((l) => /^\d\d:\d\d:\d\d /.test(l));
  while (lines().length < alerts.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await printer.stop();
  await bus.close();
  return lines();
}

describe('the embedded console', () => {
  it('prints an alert whose text carries escape sequences and newlines as one inert line', async () => {
    const bus = new MemoryBus({ partitions: 1 });
    let out = '';
    const sink = new Writable({
      write(chunk, _e, done) {
        out += String(chunk);
        done();
      },
    });
    const printer = await printAlerts(bus, sink);
    const summary = 'desc\u001b[31mRED\u001b[0m\nFAKE 02:00:00  CRITICAL  other-host  [xid]  forged line\r\u001b[1A\u001b[2Kerased';
    await bus.publish(TOPICS.alerts, [
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-1',
          source: 'test',
          data: {
            fingerprint: 'f1',
            status: 'firing',
            severity: 'critical',
            category: 'xid',
            rule: 'r',
            summary,
            action: 'reboot\u001b]0;PWNED\u0007',
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      ),
    ]);
    const deadline = Date.now() + 5_000;
    while (!out.includes('PWNED') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await printer.stop();
    await bus.close();
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out.split('\n').filter((l) => l.includes('FAKE'))).toEqual([expect.stringMatching(/gpu-node-1 +\[xid\] +desc\\x1b\[31mRED\\x1b\[0m\\x0aFAKE/)]);
    expect(out).toContain('→ reboot\\x1b]0;PWNED\\x07');
  });

  it('prints the incident on every line of it: the root (the fan) as it fires, the GPUs that join it, and every resolve', async () => {
    const rules = loadRuleSet();
    const catalog = loadXidCatalog();
    if (!rules.ok || !catalog.ok) throw new Error('bundled rules');
    const clock = new StreamClock(new Engine(rules.value, catalog.value));
    const state = emptyEngineState();
    const alerts: EnvelopeOf<'alert'>[] = [];
    for (const line of readFileSync(DEMO_RECORDINGS.cooling, 'utf8').split('\n')) {
      if (line === '') continue;
      const parsed = parseEnvelope(line);
      if (!parsed.ok) throw new Error(parsed.error.message);
      alerts.push(...clock.judge(state, parsed.value));
    }
    const fan = alerts.find((a) => a.data.rule === 'host-fan' && a.data.status === 'firing')!;
    const incident = fan.data.fingerprint;
    // As the engine says it: the root names no incident, nor does any resolve; the GPUs name the fan's.
    expect(fan.data.incident).toBeUndefined();
    expect(alerts.filter((a) => a.data.status === 'resolved').length).toBeGreaterThanOrEqual(4);
    const lines = await printed(alerts);
    expect(lines).toHaveLength(alerts.length);
    expect(lines[0]).toMatch(/gpu-node-000 {2}\[thermal\] {2}gpu-node-000: fan FAN3 failed .*\(incident (\w+), root cause cooling\)$/);
    for (const line of lines) expect(line).toContain(`(incident ${incident}, root cause cooling)`);
    expect(lines.filter((l) => l.includes('RESOLVED')).length).toBeGreaterThanOrEqual(4);
  });

  it('names no incident where none opens: maintenance notices and alerts the engine did not judge', async () => {
    const alert = (source: string, category: 'maintenance' | 'thermal', fingerprint: string) =>
      newEnvelope({
        type: 'alert',
        host: 'gpu-node-1',
        source,
        data: {
          fingerprint,
          status: 'firing',
          severity: 'warning',
          category,
          rule: 'r',
          summary: `${source} ${category}`,
          starts_at: new Date().toISOString(),
          evidence: [],
        },
      });
    const lines = await printed([
      alert(ENGINE_SOURCE, 'maintenance', 'm1'),
      alert('intake/alertmanager', 'thermal', 'a1'),
      alert(ENGINE_SOURCE, 'thermal', 't1'),
    ]);
    expect(lines).toHaveLength(3);
    expect(lines.slice(0, 2).every((l) => !l.includes('incident'))).toBe(true);
    expect(lines[2]).toMatch(/\(incident t1\)$/); // the one that does: a lone engine alert is an incident of its own
  });
});
