import { newEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { actionAlerts, actionLink } from './action-alerts.ts';
import { awaitsApproval, foldActions, newestFirst } from './action-views.ts';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 5, 3, minute)).toISOString();

function action(id: string, host: string, minute: number, phase: 'awaiting_approval' | 'proposed' = 'awaiting_approval'): Envelope {
  return {
    ...newEnvelope({
      type: 'action',
      host,
      source: 'remediator/test',
      data: {
        action_id: id,
        kind: 'drain',
        phase,
        policy_rule: 'xid-fallen-off-bus',
        reason: 'Xid 79: GPU 3 has fallen off the bus',
        gpu: 3,
        ...(phase === 'awaiting_approval' ? { approval_deadline: at(minute + 30), on_timeout: 'deny' as const } : {}),
      },
    }),
    ts: at(minute),
  };
}

function approval(id: string, minute: number, decision: 'approved' | 'denied' | 'expired', by: string): Envelope {
  return { ...newEnvelope({ type: 'action.approval', host: 'h', source: 'cli/test', data: { action_id: id, decision, by } }), ts: at(minute) };
}

function result(id: string, minute: number, outcome: 'succeeded' | 'retrying', error?: string): Envelope {
  return {
    ...newEnvelope({
      type: 'action.result',
      host: 'h',
      source: 'remediator/test',
      data: { action_id: id, kind: 'drain', outcome, attempt: outcome === 'retrying' ? 1 : 2, executor: 'slurm', ...(error ? { error } : {}) },
    }),
    ts: at(minute),
  };
}

describe('where each remediation action stands, folded from gpualert.actions', () => {
  it('follows an action from waiting, through a person’s word, to what running it did', () => {
    const views = foldActions([action('a1', 'gpu-node-002', 1), approval('a1', 2, 'approved', 'alice'), result('a1', 3, 'retrying', 'scontrol: timed out')]);
    expect(views.get('a1')).toMatchObject({
      host: 'gpu-node-002',
      state: 'retrying',
      decided_by: 'alice',
      attempt: 1,
      error: 'scontrol: timed out',
      at: at(1),
      updated: at(3),
    });
    // the retry that worked clears the error it had
    const after = foldActions([
      action('a1', 'gpu-node-002', 1),
      approval('a1', 2, 'approved', 'alice'),
      result('a1', 3, 'retrying', 'x'),
      result('a1', 4, 'succeeded'),
    ]);
    expect(after.get('a1')?.state).toBe('succeeded');
    expect(after.get('a1')?.error).toBeUndefined();
  });

  it('never lets a replayed decision undo a decision read since, nor invents an action from an orphan approval', () => {
    const views = foldActions([
      action('a1', 'gpu-node-002', 1),
      approval('a1', 2, 'denied', 'bob'),
      action('a1', 'gpu-node-002', 5),
      approval('zz', 6, 'approved', 'eve'),
    ]);
    expect(views.get('a1')).toMatchObject({ state: 'denied', decided_by: 'bob', at: at(1) });
    expect(awaitsApproval(views.get('a1')!)).toBe(false);
    expect(views.has('zz')).toBe(false);
    // a replay with nothing decided yet keeps when it was first decided
    expect(foldActions([action('a2', 'n', 1), action('a2', 'n', 9)]).get('a2')).toMatchObject({ at: at(1), updated: at(9), state: 'awaiting_approval' });
  });

  it('keeps the newest actions past its bound, and lists newest first; a host named like a prototype key is only data', () => {
    const envelopes = Array.from({ length: 12 }, (_, i) => action(`a${i}`, i === 11 ? '__proto__' : `n${i}`, i, 'proposed'));
    const views = foldActions(envelopes, 10);
    expect([...views.keys()]).toEqual(Array.from({ length: 10 }, (_, i) => `a${i + 2}`));
    expect(newestFirst(views.values()).map((v) => v.id)).toEqual(Array.from({ length: 10 }, (_, i) => `a${11 - i}`));
    expect(views.get('a11')?.host).toBe('__proto__');
  });
});

describe('the approval alert’s link to the console', () => {
  it('names the action’s page in the console, encoded, in the message and as an annotation; without a console URL, the commands only', () => {
    const waiting = action('7c1f/..?x#y', 'gpu-node-002', 1);
    const [withLink] = actionAlerts([waiting], 'remediator/test', 'https://gpualert.example.org/ops/');
    const link = 'https://gpualert.example.org/ops/console/#/actions/7c1f%2F..%3Fx%23y';
    expect(actionLink('https://gpualert.example.org/ops/', '7c1f/..?x#y')).toBe(link);
    expect(withLink?.data.annotations?.approve_url).toBe(link);
    expect(withLink?.data.action).toContain(`Approve or deny in the console: ${link}`);
    expect(withLink?.data.action).toContain('gpualert action approve 7c1f/..?x#y');
    const [without] = actionAlerts([waiting], 'remediator/test');
    expect(without?.data.annotations?.approve_url).toBeUndefined();
    expect(without?.data.action).toBe('Approve with `gpualert action approve 7c1f/..?x#y` or deny with `gpualert action deny 7c1f/..?x#y`.');
  });
});
