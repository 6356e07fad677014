import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeMessage, MemoryBus, type Bus } from '@gpualert/bus';
import { createNotifierServer, NotifierMetrics } from '@gpualert/notifier';
import { actionAlerts, foldActions } from '@gpualert/remediation';
import { newEnvelope, parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { Browser, type Page } from './console-browser.ts';
import { close, listen } from './infra/http.ts';

const TOKEN = 'console-token-0123456789';
/** Screenshots land here for a person to look at (kept after the run), beside the console test's. */
const SHOTS = join(tmpdir(), 'gpualert-console-shots');
const HOSTILE = '<img src=x onerror="document.title=\'owned\'">';

/** A decision `minutesAgo` before now (the page lists newest first); one waiting has 30 min from then. */
function decided(id: string, host: string, phase: 'awaiting_approval' | 'proposed', reason: string, minutesAgo: number): Envelope {
  const e = newEnvelope({
    type: 'action',
    host,
    source: 'remediator/test',
    data: {
      action_id: id,
      kind: 'drain',
      phase,
      policy_rule: 'xid-fallen-off-bus',
      reason,
      gpu: 3,
      ...(phase === 'awaiting_approval'
        ? { approval_deadline: new Date(Date.now() - minutesAgo * 60_000 + 1_800_000).toISOString(), on_timeout: 'deny' as const }
        : {}),
    },
  });
  return { ...e, ts: new Date(Date.now() - minutesAgo * 60_000).toISOString() };
}

/** `n` views of one bus whose reads all wait until each view has begun one: every reader sees the topic as it was before any of them wrote. */
function readTogether(bus: MemoryBus, n: number): Bus[] {
  let begun = 0;
  let release = () => {};
  const together = new Promise<void>((resolve) => (release = resolve));
  return Array.from(
    { length: n },
    () =>
      new Proxy(bus, {
        get(target, prop) {
          if (prop === 'read')
            return async (...args: Parameters<Bus['read']>) => {
              begun += 1;
              if (begun >= n) release();
              await together;
              return target.read(...args);
            };
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      }),
  );
}

async function actionsOnBus(bus: MemoryBus): Promise<Envelope[]> {
  return (await bus.read(TOPICS.actions)).flatMap((m) => {
    const parsed = parseEnvelope(m.value.toString('utf8'));
    return parsed.ok ? [parsed.value] : [];
  });
}

describe('remediation actions in the console: listed, and approved or denied by a person', () => {
  const bus = new MemoryBus();
  const server = createNotifierServer(new MemoryStore(), new NotifierMetrics(), TOKEN, bus);
  const waiting = decided('act-waiting-1', 'gpu-node-002', 'awaiting_approval', `Xid 79 on GPU 3: fallen off the bus ${HOSTILE}`, 2);
  const other = decided('act-waiting-2', 'gpu-node-007', 'awaiting_approval', 'Xid 48: double-bit ECC error', 1);
  const done = decided('act-done-1', 'gpu-node-001', 'proposed', 'Xid 79 on GPU 1', 3);
  const auth = { authorization: `Bearer ${TOKEN}` };
  let base = '';
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await bus.publish(TOPICS.actions, [done, waiting, other].map(envelopeMessage));
    await bus.publish(TOPICS.actions, [
      envelopeMessage(
        newEnvelope({
          type: 'action.result',
          host: 'gpu-node-001',
          source: 'remediator/test',
          data: { action_id: 'act-done-1', kind: 'drain', outcome: 'succeeded', attempt: 1, executor: 'slurm' },
        }),
      ),
    ]);
    base = await listen(server);
    browser = await Browser.launch();
    page = await browser.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await close(server);
    await bus.close();
  });

  it('lists the actions behind the token, those waiting for a person first; a decision that is not one is refused in one line', async () => {
    expect((await fetch(`${base}/v1/actions`)).status).toBe(401);
    const list = (await (await fetch(`${base}/v1/actions`, { headers: auth })).json()) as {
      actions: { id: string; state: string }[];
      waiting: number;
      total: number;
    };
    expect([list.waiting, list.total]).toEqual([2, 3]);
    expect(list.actions.map((a) => `${a.id} ${a.state}`)).toEqual([
      'act-waiting-2 awaiting_approval',
      'act-waiting-1 awaiting_approval',
      'act-done-1 succeeded',
    ]);
    const post = (id: string, body: unknown) =>
      fetch(`${base}/v1/actions/${id}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const refusals = [
      await post('act-waiting-1', { decision: 'approved' }),
      await post('act-waiting-1', { decision: 'approved', by: '<!channel> alice' }),
      await post('act-waiting-1', { decision: 'approved', by: 'alice\nbob' }),
      await post('act-waiting-1', { decision: 'maybe', by: 'alice' }),
      await post('act-waiting-1', { decision: 'approved', by: 'alice', shell: 'rm -rf /' }),
      await post('act-nope', { decision: 'approved', by: 'alice' }),
      await post('act-done-1', { decision: 'approved', by: 'alice' }),
    ];
    expect(refusals.map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 404, 409]);
    expect(((await refusals[6]!.json()) as { message: string }).message).toBe('action act-done-1 is succeeded, not awaiting approval');
    expect((await fetch(`${base}/v1/actions/act-waiting-1`, { headers: auth })).status).toBe(405);
    // nothing was decided by any of them
    expect((await actionsOnBus(bus)).filter((e) => e.type === 'action.approval')).toEqual([]);
  });

  it("the approval message's link opens the action, marked; approving there needs a name and puts the person's word on gpualert.actions", async () => {
    const [alert] = actionAlerts([waiting], 'remediator/test', base);
    const link = alert?.data.annotations?.approve_url ?? '';
    expect(link).toBe(`${base}/console/#/actions/act-waiting-1`);
    await page.goto(link);
    await page.waitFor('document.getElementById("token-form") && !document.getElementById("token-form").hidden', 'the token form');
    await page.evaluate(`document.getElementById('token').value = ${JSON.stringify(TOKEN)}; document.getElementById('token-form').requestSubmit(); true`);
    await page.waitFor('document.body.dataset.view === "actions"', 'the actions page');
    const rows = await page.evaluate<{ id: string; state: string; focus: boolean; buttons: number }[]>(
      `[...document.querySelectorAll('#actions tr[data-action]')].map((r) => ({ id: r.dataset.action, state: r.dataset.state, focus: r.classList.contains('focus'), buttons: r.querySelectorAll('button[data-decide]').length }))`,
    );
    expect(rows).toEqual([
      { id: 'act-waiting-2', state: 'awaiting_approval', focus: false, buttons: 2 },
      { id: 'act-waiting-1', state: 'awaiting_approval', focus: true, buttons: 2 },
      { id: 'act-done-1', state: 'succeeded', focus: false, buttons: 0 },
    ]);
    // the reason the remediator wrote is text, never markup
    expect(await page.evaluate('document.querySelector("tr.focus").innerText.includes("<img src=x")')).toBe(true);
    expect(await page.evaluate('document.querySelectorAll("#actions img").length')).toBe(0);
    // opening the link decided nothing
    expect((await actionsOnBus(bus)).filter((e) => e.type === 'action.approval')).toEqual([]);
    const approve = `document.querySelector('tr.focus button[data-decide="approved"]').click(); true`;
    await page.evaluate(`document.getElementById('a-by').value = ''; ${approve}`);
    await page.waitFor('document.getElementById("a-result").textContent.includes("your name")', 'the refusal without a name');
    expect((await actionsOnBus(bus)).filter((e) => e.type === 'action.approval')).toEqual([]);
    await page.evaluate(`document.getElementById('a-by').value = 'alice'; document.getElementById('a-comment').value = 'node is idle, go'; ${approve}`);
    await page.waitFor('document.getElementById("status").textContent.includes("act-waiting-1: approved")', 'the approval said');
    const approvals = (await actionsOnBus(bus)).filter((e) => e.type === 'action.approval');
    expect(approvals.map((e) => [e.host, e.source, e.data])).toEqual([
      ['gpu-node-002', 'notifier/console', { action_id: 'act-waiting-1', decision: 'approved', by: 'alice', comment: 'node is idle, go' }],
    ]);
    // the page read the topic again: the action is approved, no buttons left; the CLI's fold says the same
    expect(await page.evaluate(`document.querySelector('tr[data-action="act-waiting-1"]').dataset.state`)).toBe('approved');
    expect(await page.evaluate(`document.querySelectorAll('tr[data-action="act-waiting-1"] button').length`)).toBe(0);
    expect(foldActions(await actionsOnBus(bus)).get('act-waiting-1')).toMatchObject({ state: 'approved', decided_by: 'alice' });
    await page.screenshot(join(SHOTS, 'actions.png'));
    // a second word on the same action is refused: the first one stands
    const again = await fetch(`${base}/v1/actions/act-waiting-1`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'denied', by: 'bob' }),
    });
    expect(again.status).toBe(409);
    expect(await page.evaluate('document.title')).toBe('gpualert console');
    expect(page.errors).toEqual([]);
  });

  it('an action past its approval deadline is the timeout’s: no buttons, and a late word is refused', async () => {
    const late = decided('act-late-1', 'gpu-node-009', 'awaiting_approval', 'Xid 79 on GPU 2', 40);
    await bus.publish(TOPICS.actions, [envelopeMessage(late)]);
    // the page reads the topic again after its reuse window
    await new Promise((r) => setTimeout(r, 2_100));
    const answer = await fetch(`${base}/v1/actions/act-late-1`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approved', by: 'alice' }),
    });
    expect(answer.status).toBe(409);
    expect(((await answer.json()) as { error: string }).error).toBe('approval_deadline_passed');
    await page.goto(`${base}/console/#/actions/act-late-1`);
    await page.waitFor('document.body.dataset.view === "actions" && document.querySelector(\'tr[data-action="act-late-1"]\')', 'the late action');
    expect(await page.evaluate(`document.querySelectorAll('tr[data-action="act-late-1"] button').length`)).toBe(0);
    expect(await page.evaluate(`document.querySelector('tr[data-action="act-late-1"]').innerText.includes('deadline passed')`)).toBe(true);
    expect((await actionsOnBus(bus)).filter((e) => e.type === 'action.approval' && e.data.action_id === 'act-late-1')).toEqual([]);
  });

  it('a link to an action that is not there says so', async () => {
    await page.goto(`${base}/console/#/actions/act-gone`);
    await page.waitFor('document.body.dataset.view === "actions" && document.getElementById("focus-missing")', 'the missing action said');
    expect(await page.evaluate('document.getElementById("focus-missing").textContent')).toContain('No action act-gone in the last 7 days');
  });
});

describe('two people deciding one action at once, on two replicas’ consoles', () => {
  it('the first decision counts: one is told 200, the other 409 naming it, and one decision reaches gpualert.actions', async () => {
    const bus = new MemoryBus();
    const store = new MemoryStore(); // the Redis the replicas share
    // Each console reads gpualert.actions, and both have read it (the action waiting) before either decides: the race.
    const [a, b] = readTogether(bus, 2);
    const servers = [createNotifierServer(store, new NotifierMetrics(), TOKEN, a), createNotifierServer(store, new NotifierMetrics(), TOKEN, b)];
    const bases = await Promise.all(servers.map((s) => listen(s)));
    try {
      await bus.publish(TOPICS.actions, [envelopeMessage(decided('act-race-1', 'gpu-node-003', 'awaiting_approval', 'Xid 79 on GPU 3', 1))]);
      const post = (base: string, body: unknown) =>
        fetch(`${base}/v1/actions/act-race-1`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const answers = await Promise.all([post(bases[0]!, { decision: 'approved', by: 'alice' }), post(bases[1]!, { decision: 'denied', by: 'bob' })]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const approvals = (await actionsOnBus(bus)).filter((e) => e.type === 'action.approval');
      expect(approvals).toHaveLength(1);
      const first = approvals[0]!.data as { decision: string; by: string };
      const refused = (await answers.find((a) => a.status === 409)!.json()) as { error: string; message: string };
      expect(refused).toEqual({
        error: 'already_decided',
        message: `action act-race-1 was already ${first.decision} by ${first.by}: the first decision counts`,
      });
    } finally {
      await Promise.all(servers.map((s) => close(s)));
      await bus.close();
    }
  });
});
