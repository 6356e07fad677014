import { GpualertError, newEnvelope, TOPICS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { DEADLETTER_HEADERS, envelopeMessage, type IncomingMessage, type OutgoingMessage } from './bus.ts';
import { isInfrastructureError, RetriableError } from './infrastructure-error.ts';
import { MAX_HANDLER_ATTEMPTS, retryBatch, type BatchRun } from './retry-batch.ts';

function message(offset: number, line: string): IncomingMessage {
  const out = envelopeMessage(newEnvelope({ type: 'kernel.line', host: 'h1', source: 't', data: { line } }));
  return { topic: 'in', partition: 0, offset, key: 'h1', value: Buffer.from(out.value), headers: {}, timestamp: 0 };
}

function harness(messages: IncomingMessage[], handler: BatchRun['handler']) {
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
  };
  const on = (topic: string) => published.filter((p) => p.topic === topic).flatMap((p) => p.messages);
  return { run, on };
}

describe("the bus decides retry or dead letter by the error's retriable, and records its code", () => {
  it('retries a handler that throws a retriable GpualertError past MAX_HANDLER_ATTEMPTS, and dead-letters nothing', async () => {
    let failing = 3 * MAX_HANDLER_ATTEMPTS;
    const handled: number[] = [];
    const { run, on } = harness([message(0, 'a')], async (batch) => {
      if (failing-- > 0) throw new GpualertError('GA-PROVIDER-FETCH-FAILED', 'the key server answered 503');
      handled.push(batch.items.length);
    });
    expect(await retryBatch(run)).toBe(true);
    expect(handled).toEqual([1]);
    expect(on(TOPICS.deadletter)).toEqual([]);
  });

  it('dead-letters a non-retriable GpualertError with its code, even when it wraps a socket error', async () => {
    let calls = 0;
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    // The same socket error alone is an outage: retried, not dead-lettered (the control).
    expect(isInfrastructureError(refused)).toBe(true);
    const { run, on } = harness([message(0, 'a')], async () => {
      calls += 1;
      throw new GpualertError('GA-CONFIG-INVALID', 'receiver "pager" has no routing key', { cause: refused });
    });
    expect(await retryBatch(run)).toBe(true);
    expect(calls).toBe(MAX_HANDLER_ATTEMPTS);
    const dead = on(TOPICS.deadletter);
    expect(dead.map((d) => d.headers?.[DEADLETTER_HEADERS.code])).toEqual(['GA-CONFIG-INVALID']);
    expect(dead[0]!.headers?.[DEADLETTER_HEADERS.reason]).toBe('handler of g failed: GpualertError: receiver "pager" has no routing key');
  });

  it('records GA-INTERNAL for a plain bug and GA-ENVELOPE-INVALID for bytes that are no envelope', async () => {
    const bad: IncomingMessage = { ...message(1, 'x'), value: Buffer.from('{"not":"an envelope"}') };
    const { run, on } = harness([message(0, 'a'), bad], async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'x')");
    });
    expect(await retryBatch(run)).toBe(true);
    const codes = Object.fromEntries(on(TOPICS.deadletter).map((d) => [d.headers?.[DEADLETTER_HEADERS.offset], d.headers?.[DEADLETTER_HEADERS.code]]));
    expect(codes).toEqual({ 0: 'GA-INTERNAL', 1: 'GA-ENVELOPE-INVALID' });
  });

  it("keeps today's recognition: RetriableError is GA-INFRA-UNAVAILABLE and retriable; KafkaJS, ioredis and socket errors are outages", () => {
    const e = new RetriableError('Redis away', { cause: new Error('Connection is closed.') });
    expect([e.code, e.retriable, e.name, e instanceof GpualertError]).toEqual(['GA-INFRA-UNAVAILABLE', true, 'RetriableError', true]);
    const kafka = Object.assign(new Error('Connection timeout'), { name: 'KafkaJSNumberOfRetriesExceeded', retriable: false });
    expect(isInfrastructureError(new Error('wrapped', { cause: kafka }))).toBe(true);
    expect(isInfrastructureError(new GpualertError('GA-INTERNAL', 'a bug'))).toBe(false);
  });
});
