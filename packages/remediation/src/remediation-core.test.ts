import { newEnvelope, parseEnvelope, stableId, type EnvelopeOf } from '@gpualert/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actionAlerts } from './action-alerts.ts';
import { parsePolicy } from './load-policy.ts';
import type { Policy } from './policy-file.ts';
import { RemediationCore, type CoreOutput } from './remediation-core.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

function policy(yaml: string): Policy {
  const loaded = parsePolicy('test.yaml', yaml);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.value;
}

const DRAIN_79 = (extra = '') => `
breaker: { max_share: 0.3, window: 1h }
partitions: { gpu: 10 }
defaults:
  approval: { required: false }
  undo: { on: quiet, quiet_for: 30m }
${extra}
rules:
  - name: fallen-off-bus
    match: ['category="fallen_off_bus"']
    action: drain
`;

function alert(
  host: string,
  options: { status?: 'firing' | 'resolved'; fingerprint?: string; category?: 'fallen_off_bus' | 'xid' | 'thermal'; at?: number; summary?: string } = {},
): EnvelopeOf<'alert'> {
  const at = options.at ?? T0;
  const fingerprint = options.fingerprint ?? `fp-${host}`;
  return newEnvelope({
    type: 'alert',
    id: stableId('alert', host, fingerprint, options.status ?? 'firing', at),
    ts: new Date(at).toISOString(),
    host,
    labels: { partition: 'gpu', cluster: 'c1' },
    source: 'engine/test',
    data: {
      fingerprint,
      status: options.status ?? 'firing',
      severity: 'critical',
      category: options.category ?? 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: options.summary ?? `GPU 3 on ${host} has disappeared (Xid 79: GPU has fallen off the bus)`,
      starts_at: new Date(T0).toISOString(),
      evidence: [],
      gpu: { index: 3 },
    },
  });
}

const core = (p: Policy) => new RemediationCore(p, { source: 'remediator/test', executor: 'test' });
const phases = (out: CoreOutput) =>
  out.envelopes.map((e) =>
    e.type === 'action' ? e.data.phase : e.type === 'action.approval' ? e.data.decision : e.type === 'action.result' ? e.data.outcome : e.type,
  );
const hosts = (n: number) => Array.from({ length: n }, (_, i) => `gpu-${String(i + 1).padStart(2, '0')}`);

/** Runs every command to success at once, as a healthy scheduler would. */
function runAll(c: RemediationCore, out: CoreOutput, now: number): CoreOutput[] {
  return out.commands.map((cmd) => c.result(cmd.actionId, { outcome: 'succeeded' }, now));
}

describe('the circuit breaker', () => {
  it('stops the 4th drain in a 10-node partition with a 30 % limit, pages once, and stops acting', () => {
    const c = core(policy(DRAIN_79()));
    const outs = hosts(5).map((h, i) => {
      const out = c.alert(alert(h), T0 + i * 1000);
      runAll(c, out, T0 + i * 1000);
      return out;
    });
    expect(outs.map((o) => o.commands.length)).toEqual([1, 1, 1, 0, 0]);
    const fourth = outs[3]!.envelopes[0]!;
    expect(fourth.type === 'action' && fourth.data.phase).toBe('refused');
    expect(fourth.type === 'action' && fourth.data.breaker_tripped).toBe(true);
    expect(fourth.type === 'action' && fourth.data.reason).toMatch(/3 of 10 hosts/);
    const fifth = outs[4]!.envelopes[0]!;
    expect(fifth.type === 'action' && fifth.data.breaker_tripped).toBeUndefined();
    expect(fifth.type === 'action' && fifth.data.reason).toMatch(/circuit breaker open/);
    // Every envelope the core writes passes the schema at the door.
    for (const o of outs) for (const e of o.envelopes) expect(parseEnvelope(JSON.stringify(e)).ok).toBe(true);
  });

  it('refuses when the partition size is unknown rather than guessing', () => {
    const c = core(policy(DRAIN_79().replace('partitions: { gpu: 10 }', '')));
    const out = c.alert(alert('gpu-01'), T0);
    expect(out.commands).toEqual([]);
    expect(phases(out)).toEqual(['refused']);
  });

  it('never has more than the share out, whatever the size, share and order (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(fc.integer({ min: 0, max: 39 }), { maxLength: 80 }),
        (size, pct, order) => {
          const p = policy(
            DRAIN_79()
              .replace('max_share: 0.3', `max_share: ${pct / 100}`)
              .replace('gpu: 10', `gpu: ${size}`),
          );
          const c = core(p);
          let drains = 0;
          order.forEach((i, step) => {
            const out = c.alert(alert(`n${i % size}`, { fingerprint: `f${step}` }), T0 + step);
            drains += out.commands.length;
            runAll(c, out, T0 + step);
          });
          expect(drains).toBeLessThanOrEqual(Math.max(1, Math.floor((size * pct) / 100 + 1e-9)));
        },
      ),
    );
  });

  it('lets one node of a partition too small for its share (10 % of 5) be drained, and stops the second', () => {
    const c = core(policy(DRAIN_79().replace('max_share: 0.3', 'max_share: 0.1').replace('gpu: 10', 'gpu: 5')));
    const outs = hosts(2).map((h, i) => {
      const out = c.alert(alert(h), T0 + i * 1000);
      runAll(c, out, T0 + i * 1000);
      return out;
    });
    expect(outs.map((o) => o.commands.map((x) => `${x.host}:${x.kind}`))).toEqual([['gpu-01:drain'], []]);
    expect(phases(outs[1] ?? { envelopes: [], commands: [] })).toEqual(['refused']);
  });

  it('charges a node in several partitions to each: a full partition stops the drain even when the first has room', () => {
    const c = core(policy(DRAIN_79()));
    // Slurm's view: gpu-01 is in gpu and debug; debug has 2 nodes, so 30 % of it allows one out.
    c.setInventory(
      new Map([
        ['gpu', 10],
        ['debug', 2],
      ]),
      new Map<string, string | readonly string[]>([
        ['gpu-01', ['gpu', 'debug']],
        ['gpu-02', ['debug']],
        ['gpu-03', 'gpu'],
      ]),
    );
    const first = c.alert(alert('gpu-01'), T0);
    runAll(c, first, T0);
    expect(first.commands.map((x) => x.host)).toEqual(['gpu-01']);
    const second = c.alert(alert('gpu-02'), T0 + 1000);
    expect(second.commands).toEqual([]);
    const refusal = second.envelopes[0];
    expect(refusal?.type === 'action' && refusal.data.reason).toMatch(/1 of 2 hosts of partition "debug"/);
    expect(c.alert(alert('gpu-03'), T0 + 2000).commands.map((x) => x.host)).toEqual(['gpu-03']); // gpu itself has room
  });

  it('its page resolves when the breaker closes again, once its window has passed', () => {
    const c = core(policy(DRAIN_79()));
    const outs = hosts(4).map((h, i) => {
      const out = c.alert(alert(h), T0 + i * 1000);
      runAll(c, out, T0 + i * 1000);
      return out;
    });
    const pages = (out: CoreOutput) => actionAlerts(out.envelopes, 'remediator/test').filter((a) => a.data.rule === 'remediation-breaker');
    const [page] = pages(outs[3] ?? { envelopes: [], commands: [] });
    expect(page?.data.status).toBe('firing');
    expect(pages(c.tick(T0 + 30 * MIN))).toEqual([]); // still open within the hour
    const closed = c.tick(T0 + 3_000 + 60 * MIN);
    expect(pages(closed).map((a) => [a.data.status, a.data.fingerprint])).toEqual([['resolved', page?.data.fingerprint]]);
    for (const e of closed.envelopes) expect(parseEnvelope(JSON.stringify(e)).ok).toBe(true);
    expect(pages(c.tick(T0 + 200 * MIN))).toEqual([]); // resolved once
  });
});

describe('dry run', () => {
  it('records what it would do and asks the executor for nothing, undo included', () => {
    const c = core(policy(DRAIN_79('dry_run: true')));
    const out = c.alert(alert('gpu-01'), T0);
    expect(out.commands).toEqual([]);
    expect(phases(out)).toEqual(['dry_run']);
    expect(c.holds()).toEqual([{ host: 'gpu-01', actionId: expect.any(String), since: T0, dry: true }]);
    c.alert(alert('gpu-01', { status: 'resolved' }), T0 + MIN);
    c.evidence('gpu-01', 'healthy', T0 + 2 * MIN);
    const undo = c.tick(T0 + 40 * MIN);
    expect(undo.commands).toEqual([]);
    expect(phases(undo)).toEqual(['dry_run']);
  });
});

describe('a dry run beside real actions', () => {
  it("a dry run's pretend hold does not hold back a real drain of the same host", () => {
    const c = core(
      policy(`
breaker: { max_share: 0.3, window: 1h }
partitions: { gpu: 10 }
defaults: { approval: { required: false } }
rules:
  - { name: xid-trial, match: ['category="xid"'], action: drain, dry_run: true }
  - { name: fallen-off-bus, match: ['category="fallen_off_bus"'], action: drain }
`),
    );
    expect(phases(c.alert(alert('gpu-01', { category: 'xid', fingerprint: 'trial' }), T0))).toEqual(['dry_run']);
    const real = c.alert(alert('gpu-01'), T0 + MIN);
    expect(real.commands.map((x) => `${x.host}:${x.kind}`)).toEqual(['gpu-01:drain']);
    runAll(c, real, T0 + MIN);
    expect(c.holds().map((h) => [h.host, h.dry])).toEqual([['gpu-01', false]]);
  });

  it('the same alert, recorded by a dry run, is acted on once the rule is made real', () => {
    const c = core(policy(DRAIN_79('dry_run: true')));
    expect(phases(c.alert(alert('gpu-02'), T0))).toEqual(['dry_run']);
    c.setPolicy(policy(DRAIN_79()));
    expect(c.alert(alert('gpu-02'), T0 + MIN).commands.map((x) => x.kind)).toEqual(['drain']);
  });
});

describe('approval', () => {
  const withApproval = (onTimeout: 'deny' | 'proceed') =>
    policy(DRAIN_79().replace('approval: { required: false }', `approval: { required: true, timeout: 30m, on_timeout: ${onTimeout} }`));

  it('an unapproved action expires at the timeout when the policy says deny, and nothing runs', () => {
    const c = core(withApproval('deny'));
    const out = c.alert(alert('gpu-01'), T0);
    expect(phases(out)).toEqual(['awaiting_approval']);
    expect(c.tick(T0 + 29 * MIN)).toEqual({ envelopes: [], commands: [] });
    const late = c.tick(T0 + 30 * MIN);
    expect(phases(late)).toEqual(['expired']);
    expect(late.commands).toEqual([]);
    expect(c.approve(c.list()[0]!.id, 'approved', 'alice', T0 + 31 * MIN)).toMatch(/expired, not awaiting approval/);
  });

  it('a word given after the deadline, read before the tick (the remediator behind), is refused; one given in time and read late counts', () => {
    const c = core(withApproval('deny'));
    c.alert(alert('gpu-01'), T0);
    const id = c.list()[0]!.id;
    expect(c.approve(id, 'approved', 'alice', T0 + 31 * MIN, undefined, T0 + 30 * MIN)).toMatch(/passed its approval deadline/);
    expect(c.tick(T0 + 31 * MIN).commands).toEqual([]);
    const d = core(withApproval('deny'));
    d.alert(alert('gpu-01'), T0);
    const given = d.approve(d.list()[0]!.id, 'approved', 'alice', T0 + 31 * MIN, undefined, T0 + 29 * MIN);
    expect(typeof given === 'string' ? given : given.commands.map((cmd) => cmd.kind)).toEqual(['drain']);
  });

  it('proceeds at the timeout when the policy says proceed', () => {
    const c = core(withApproval('proceed'));
    c.alert(alert('gpu-01'), T0);
    const late = c.tick(T0 + 30 * MIN);
    expect(phases(late)).toEqual(['approved', 'proposed']);
    expect(late.commands.map((x) => x.kind)).toEqual(['drain']);
  });

  it('runs once approved, is denied when denied, and a second word changes nothing', () => {
    const c = core(withApproval('deny'));
    c.alert(alert('gpu-01'), T0);
    c.alert(alert('gpu-02'), T0);
    const [b, a] = c
      .list()
      .sort((x, y) => x.host.localeCompare(y.host))
      .reverse();
    const approved = c.approve(a!.id, 'approved', 'alice', T0 + MIN);
    expect(typeof approved !== 'string' && approved.commands.map((x) => x.host)).toEqual(['gpu-01']);
    expect(typeof c.approve(a!.id, 'approved', 'alice', T0 + MIN)).toBe('string');
    const denied = c.approve(b!.id, 'denied', 'bob', T0 + MIN);
    expect(typeof denied !== 'string' && phases(denied)).toEqual(['denied']);
  });
});

describe('undo on evidence', () => {
  it('returns a host after a quiet period with healthy samples, not before, and never while another alert still calls for it', () => {
    const c = core(policy(DRAIN_79()));
    runAll(c, c.alert(alert('gpu-01', { fingerprint: 'a' }), T0), T0);
    c.alert(alert('gpu-01', { fingerprint: 'b' }), T0 + MIN); // a second fault on the same host
    c.alert(alert('gpu-01', { fingerprint: 'a', status: 'resolved' }), T0 + 2 * MIN);
    c.evidence('gpu-01', 'healthy', T0 + 3 * MIN);
    expect(c.tick(T0 + 120 * MIN).commands).toEqual([]); // b still fires
    c.alert(alert('gpu-01', { fingerprint: 'b', status: 'resolved' }), T0 + 121 * MIN);
    expect(c.tick(T0 + 122 * MIN).commands).toEqual([]); // no healthy sample since the last call
    c.evidence('gpu-01', 'healthy', T0 + 123 * MIN);
    expect(c.tick(T0 + 140 * MIN).commands).toEqual([]); // quiet for 19 min since the last caller resolved: not 30
    const undo = c.tick(T0 + 151 * MIN);
    expect(undo.commands.map((x) => [x.host, x.kind])).toEqual([['gpu-01', 'resume']]);
    runAll(c, undo, T0 + 151 * MIN);
    expect(c.holds()).toEqual([]);
    expect(c.tick(T0 + 300 * MIN).commands).toEqual([]); // undone once
  });

  it('waits for a reboot after the hold when the rule says reboot, and never undoes when it says never', () => {
    const c = core(policy(DRAIN_79().replace('undo: { on: quiet, quiet_for: 30m }', 'undo: { on: reboot }')));
    runAll(c, c.alert(alert('gpu-01'), T0), T0);
    c.alert(alert('gpu-01', { status: 'resolved' }), T0 + MIN);
    c.evidence('gpu-01', 'reboot', T0 - MIN); // a reboot before the hold is no evidence
    c.evidence('gpu-01', 'healthy', T0 + 2 * MIN);
    expect(c.tick(T0 + 600 * MIN).commands).toEqual([]);
    c.evidence('gpu-01', 'reboot', T0 + 601 * MIN);
    expect(c.tick(T0 + 602 * MIN).commands.map((x) => x.kind)).toEqual(['resume']);

    const never = core(policy(DRAIN_79().replace('undo: { on: quiet, quiet_for: 30m }', 'undo: { on: never }')));
    runAll(never, never.alert(alert('gpu-01'), T0), T0);
    never.alert(alert('gpu-01', { status: 'resolved' }), T0 + MIN);
    never.evidence('gpu-01', 'healthy', T0 + 2 * MIN);
    never.evidence('gpu-01', 'reboot', T0 + 3 * MIN);
    expect(never.tick(T0 + 10_000 * MIN).commands).toEqual([]);
  });
});

describe('idempotency', () => {
  it('a replay of the same alerts drains nothing twice', () => {
    const c = core(policy(DRAIN_79()));
    const recording = hosts(3).flatMap((h, i) => [alert(h, { at: T0 + i }), alert(h, { at: T0 + i + 5 })]);
    let commands = 0;
    for (let pass = 0; pass < 3; pass += 1)
      for (const a of recording) {
        const out = c.alert(a, T0 + pass * MIN);
        commands += out.commands.length;
        runAll(c, out, T0 + pass * MIN);
      }
    expect(commands).toBe(3);
  });

  it('a second alert for a host already held or being drained starts nothing (property: at most one drain per host until it is undone)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ host: fc.integer({ min: 0, max: 4 }), fp: fc.integer({ min: 0, max: 6 }), resolve: fc.boolean(), succeed: fc.boolean() }), {
          maxLength: 60,
        }),
        (steps) => {
          const c = core(policy(DRAIN_79().replace('max_share: 0.3', 'max_share: 1')));
          const running = new Map<string, string>();
          const held = new Set<string>();
          steps.forEach((s, i) => {
            const host = `n${s.host}`;
            const out = c.alert(alert(host, { fingerprint: `f${s.fp}`, status: s.resolve ? 'resolved' : 'firing' }), T0 + i);
            for (const cmd of out.commands) {
              expect(held.has(host) || running.has(host)).toBe(false);
              running.set(host, cmd.actionId);
            }
            const id = running.get(host);
            if (id !== undefined && s.succeed) {
              c.result(id, { outcome: 'succeeded' }, T0 + i);
              running.delete(host);
              held.add(host);
            }
          });
        },
      ),
    );
  });

  it('an executor that finds the node already drained reports it held, and the host is held', () => {
    const c = core(policy(DRAIN_79()));
    const out = c.alert(alert('gpu-01'), T0);
    const result = c.result(out.commands[0]!.actionId, { outcome: 'already_held' }, T0);
    expect(phases(result)).toEqual(['already_held']);
    expect(c.holds().map((h) => h.host)).toEqual(['gpu-01']);
  });
});

describe('an API that is down', () => {
  it('is retried with backoff and each failure reported, never dropped', () => {
    const c = core(policy(DRAIN_79()));
    const first = c.alert(alert('gpu-01'), T0).commands[0]!;
    const failed = c.result(first.actionId, { outcome: 'failed', retriable: true, error: 'slurm_load_node error: Unable to contact slurm controller' }, T0);
    expect(phases(failed)).toEqual(['retrying']);
    const e = failed.envelopes[0]!;
    expect(e.type === 'action.result' && e.data.next_attempt_at).toBe(new Date(T0 + 1_000).toISOString());
    expect(c.tick(T0 + 999).commands).toEqual([]);
    const again = c.tick(T0 + 1_000).commands;
    expect(again.map((x) => x.attempt)).toEqual([2]);
    c.result(first.actionId, { outcome: 'failed', retriable: true, error: 'down' }, T0 + 1_000);
    expect(c.tick(T0 + 2_999).commands).toEqual([]); // 2 s the second time
    expect(c.tick(T0 + 3_000).commands.map((x) => x.attempt)).toEqual([3]);
    // Many failures later the delay stops growing at the cap, and it is still tried.
    let now = T0 + 3_000;
    for (let i = 0; i < 30; i += 1) {
      c.result(first.actionId, { outcome: 'failed', retriable: true, error: 'down' }, now);
      now += 5 * MIN;
      expect(c.tick(now).commands).toHaveLength(1);
    }
    expect(phases(c.result(first.actionId, { outcome: 'succeeded' }, now))).toEqual(['succeeded']);
  });

  it('a refusal that cannot succeed by retrying is reported as failed', () => {
    const c = core(policy(DRAIN_79()));
    const first = c.alert(alert('gpu-01'), T0).commands[0]!;
    expect(phases(c.result(first.actionId, { outcome: 'failed', retriable: false, error: 'Invalid node name specified' }, T0))).toEqual(['failed']);
    expect(c.tick(T0 + 10 * MIN).commands).toEqual([]);
  });
});

describe('hostile host names', () => {
  it.each(['-rf', '--help', 'gpu-[01-99]', 'a,b', '../etc/passwd', 'a/b', 'a b', 'x=y', 'node.', 'ALL', 'all', '.hidden'])(
    '%s never reaches a command',
    (host) => {
      const c = core(policy(DRAIN_79().replace('gpu: 10', 'gpu: 1000')));
      const out = c.alert(alert(host), T0);
      expect(out.commands).toEqual([]);
      expect(phases(out)).toEqual(['refused']);
    },
  );

  it('a host called constructor or __proto__ is only a name', () => {
    const c = core(policy(DRAIN_79()));
    expect(phases(c.alert(alert('__proto__'), T0))).toEqual(['refused']); // refused as a node name (a leading "_"), not lost as a key
    for (const h of ['constructor', 'toString', 'hasOwnProperty']) {
      const out = c.alert(alert(h), T0);
      expect(out.commands.map((x) => x.host)).toEqual([h]);
    }
  });
});

describe('the policy', () => {
  it('an alert no rule matches is only told: notify-only is the default', () => {
    const c = core(policy(DRAIN_79()));
    expect(c.alert(alert('gpu-01', { category: 'thermal' }), T0)).toEqual({ envelopes: [], commands: [] });
  });

  it('matches an Xid by number and acts on a repeat only', () => {
    const c = core(
      policy(`
partitions: { default: 10, gpu: 10 }
breaker: { max_share: 0.5, window: 1h }
defaults: { approval: { required: false } }
rules:
  - name: gsp
    match: ['xid=~"119|120"']
    action: drain
    repeat: { count: 2, within: 1h }
`),
    );
    const gsp = (fp: string, at: number) => alert('gpu-01', { fingerprint: fp, category: 'xid', summary: 'Xid 119: GSP RPC Timeout on GPU 3 on gpu-01', at });
    expect(c.alert(gsp('a', T0), T0).commands).toEqual([]);
    expect(c.alert(gsp('a', T0), T0).commands).toEqual([]); // the same envelope again is no repeat
    expect(c.alert(gsp('b', T0 + MIN), T0 + MIN).commands.map((x) => x.kind)).toEqual(['drain']);
  });

  it('refuses an approval that would wait longer than gpualert action reads back (7 days)', () => {
    const loaded = parsePolicy('remediation.yaml', 'defaults:\n  approval: { required: true, timeout: 8d }\nrules: []\n');
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors.map((e) => `${e.file}:${e.line}: ${e.field}: ${e.message}`)).toEqual([
      expect.stringMatching(/^remediation\.yaml:2: defaults\.approval\.timeout: .*at most 7d/),
    ]);
    expect(parsePolicy('remediation.yaml', 'defaults:\n  approval: { required: true, timeout: 7d }\nrules: []\n').ok).toBe(true);
  });

  it('names the file, line and field of an error', () => {
    const loaded = parsePolicy('remediation.yaml', "rules:\n  - name: x\n    match: ['category=~\"(']\n    action: drian\n");
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    const lines = loaded.errors.map((e) => `${e.file}:${e.line}: ${e.field}`);
    expect(lines).toContain('remediation.yaml:4: rules.0.action');
    expect(loaded.errors.find((e) => e.field === 'rules.0.action')?.message).toMatch(/did you mean "drain"/);
    expect(lines.some((l) => l.startsWith('remediation.yaml:3: rules.0.match'))).toBe(true);
  });
});

describe('the bundled policy', () => {
  it('loads, and suggests a drain for Xid 79 that waits for a person', async () => {
    const { loadPolicy } = await import('./load-policy.ts');
    const loaded = loadPolicy();
    expect(loaded.ok).toBe(true);
    if (!loaded.ok) return;
    const c = core(loaded.value);
    c.setInventory(new Map([['gpu', 100]]));
    const out = c.alert(alert('gpu-01'), T0);
    expect(phases(out)).toEqual(['awaiting_approval']);
    expect(out.commands).toEqual([]);
  });
});
