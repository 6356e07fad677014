import { newEnvelope, TOPICS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { DEADLETTER_HEADERS, envelopeMessage, type Batch, type IncomingMessage, type OutgoingMessage } from './bus.ts';
import { isInfrastructureError, RetriableError } from './infrastructure-error.ts';
import { MAX_ALONE_ATTEMPTS, MAX_HANDLER_ATTEMPTS, retryBatch, type BatchRun } from './retry-batch.ts';

function message(offset: number, host: string, line: string): IncomingMessage {
  const out = envelopeMessage(newEnvelope({ type: 'kernel.line', host, source: 't', data: { line } }));
  return { topic: 'in', partition: 0, offset, key: host, value: Buffer.from(out.value), headers: {}, timestamp: 0 };
}

const lines = (batch: Batch) => batch.items.map(({ envelope }) => (envelope.type === 'kernel.line' ? envelope.data.line : ''));

function harness(messages: IncomingMessage[], handler: BatchRun['handler'], extra: Partial<BatchRun> = {}) {
  const published: { topic: string; messages: readonly OutgoingMessage[] }[] = [];
  const run: BatchRun = {
    messages,
    group: 'g',
    handler,
    lag: 0,
    stillOwned: () => true,
    onError: () => {},
    backoffMs: () => 0,
    publish: async (topic, out) => void published.push({ topic, messages: out }),
    ...extra,
  };
  const on = (topic: string) => published.filter((p) => p.topic === topic).flatMap((p) => p.messages);
  return { run, published, on };
}

describe('retryBatch', () => {
  it('isolates two poison messages of one host among good ones: each good one handled once and in order, each poison dead-lettered once', async () => {
    const handled: string[] = [];
    let calls = 0;
    const messages = ['a1', 'b1', 'POISON-1', 'POISON-2', 'a2', 'b2', 'a3'].map((l, i) => message(i, l.startsWith('POISON') ? 'constructor' : `h-${l[0]}`, l));
    const { run, on } = harness(messages, async (batch) => {
      calls += 1;
      if (lines(batch).some((l) => l.startsWith('POISON'))) throw new TypeError("Cannot read properties of undefined (reading 'offsets')");
      handled.push(...lines(batch));
    });
    expect(await retryBatch(run)).toBe(true);
    expect(handled).toEqual(['a1', 'b1', 'a2', 'b2', 'a3']);
    const dead = on(TOPICS.deadletter);
    expect(dead.map((d) => JSON.parse(String(d.value)).data.line)).toEqual(['POISON-1', 'POISON-2']);
    expect(dead.map((d) => d.headers?.[DEADLETTER_HEADERS.offset])).toEqual(['2', '3']);
    expect(dead[0]!.headers?.[DEADLETTER_HEADERS.reason]).toBe("handler of g failed: TypeError: Cannot read properties of undefined (reading 'offsets')");
    expect(on(TOPICS.alerts)).toHaveLength(2);
    // Bounded: the whole batch 5 times, a few halves, and each poison twice alone.
    expect(calls).toBeLessThanOrEqual(MAX_HANDLER_ATTEMPTS + 2 * MAX_ALONE_ATTEMPTS + 2 * Math.ceil(Math.log2(messages.length)) + 4);
  });

  it('dead-letters a batch of one poison message after MAX_HANDLER_ATTEMPTS runs', async () => {
    let calls = 0;
    const { run, on } = harness([message(0, 'toString', 'x')], async () => {
      calls += 1;
      throw new Error('boom');
    });
    expect(await retryBatch(run)).toBe(true);
    expect(calls).toBe(MAX_HANDLER_ATTEMPTS);
    expect(on(TOPICS.deadletter)[0]!.headers?.[DEADLETTER_HEADERS.attempts]).toBe(String(MAX_HANDLER_ATTEMPTS));
  });

  it("retries without limit while the handler's own publish fails (Kafka away), whatever the handler throws", async () => {
    let failing = 3 * MAX_HANDLER_ATTEMPTS;
    const handled: string[] = [];
    const { run, on } = harness([message(0, 'h', 'a'), message(1, 'h', 'b')], async (batch, context) => {
      await context.publish('out', [{ key: 'h', value: 'x' }]);
      handled.push(...lines(batch));
    });
    const publish = run.publish;
    const flaky: BatchRun = {
      ...run,
      publish: async (topic, out) => {
        if (topic === 'out' && failing-- > 0) throw new Error('Broker not available'); // no class, no code
        return publish(topic, out);
      },
    };
    expect(await retryBatch(flaky)).toBe(true);
    expect(handled).toEqual(['a', 'b']);
    expect(on(TOPICS.deadletter)).toEqual([]);
  });

  it('gives up uncommitted, dead-lettering nothing, when the partition is taken away mid-isolation', async () => {
    let calls = 0;
    const { run, published } = harness(
      [message(0, 'h', 'a'), message(1, 'h', 'b')],
      async () => {
        calls += 1;
        throw new Error('bug');
      },
      { stillOwned: () => calls < MAX_HANDLER_ATTEMPTS + 1 },
    );
    expect(await retryBatch(run)).toBe(false);
    expect(published).toEqual([]);
  });

  it('keeps secrets out of the dead letter and bounds its reason', async () => {
    const { run, on } = harness([message(0, 'h', 'a')], async () => {
      throw new Error(`POST https://hooks.slack.com/services/T000/B000/SECRETTOKEN?token=hunter2 failed ${'x'.repeat(5_000)}`);
    });
    await retryBatch(run);
    const reason = on(TOPICS.deadletter)[0]!.headers![DEADLETTER_HEADERS.reason]!;
    expect(reason).not.toMatch(/SECRETTOKEN|hunter2/);
    expect(reason.length).toBeLessThanOrEqual(1_000);
  });

  it('commits once the dead letter is durable even when the dead-letter hook keeps failing', async () => {
    const { run, on } = harness(
      [message(0, 'h', 'a')],
      async () => {
        throw new Error('bug');
      },
      {
        onDeadLetter: async () => {
          throw new Error('hook bug');
        },
      },
    );
    expect(await retryBatch(run)).toBe(true);
    expect(on(TOPICS.deadletter)).toHaveLength(1);
  });

  it('raises no pipeline alert for a poison pipeline alert, so an alert consumer cannot feed itself', async () => {
    const alert = envelopeMessage(
      newEnvelope({
        type: 'alert',
        host: 'gpualert',
        source: 't',
        data: {
          fingerprint: 'f',
          status: 'firing',
          severity: 'error',
          category: 'pipeline',
          rule: 'r',
          summary: 's',
          starts_at: '2026-01-01T00:00:00.000Z',
          evidence: [],
        },
      }),
    );
    const { run, on } = harness([{ ...message(0, 'gpualert', 'x'), value: Buffer.from(alert.value) }], async () => {
      throw new Error('bug');
    });
    await retryBatch(run);
    expect(on(TOPICS.deadletter)).toHaveLength(1);
    expect(on(TOPICS.alerts)).toEqual([]);
  });
});

describe('isInfrastructureError', () => {
  it('tells an outage from a bug', () => {
    const kafka = Object.assign(new Error('Connection timeout'), { name: 'KafkaJSNumberOfRetriesExceeded', retriable: false });
    const redis = Object.assign(new Error('Reached the max retries per request limit (which is 3).'), { name: 'MaxRetriesPerRequestError' });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    for (const e of [kafka, redis, refused, new Error('Connection is closed.'), new RetriableError('x'), new Error('wrapped', { cause: refused })]) {
      expect(isInfrastructureError(e)).toBe(true);
    }
    for (const e of [
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      new RangeError('Maximum call stack size exceeded'),
      'a string',
      null,
    ]) {
      expect(isInfrastructureError(e)).toBe(false);
    }
  });
});
