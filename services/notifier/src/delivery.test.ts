import { Writable } from 'node:stream';
import { createServer, type Server } from 'node:http';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { createChannel, rateLimitOf, RoutesFile, type Channel, type Notification } from '@gpualert/notify';
import { newEnvelope, parseEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { attemptOnce, deliver, RateLimiter } from './delivery.ts';
import { startNotifier } from './notifier-service.ts';

const log = createLogger({ name: 'test', level: 'silent' });
/**
 * A retry backoff no test waits out: stopping within a twentieth of it (30 s) tells an abort from
 * a wait on any machine.
 */
const BACKOFF_MS = 600_000;
const NOTIFICATION: Notification = { id: 'n1', receiver: 'r', group: 'g', reason: 'page', firing: 1, alerts: [] };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('a delivery', () => {
  it('that throws is a permanent failed delivery, redacted, never a crash', async () => {
    const channel: Channel = {
      name: 'slack',
      send: () => {
        throw new TypeError('Failed to parse URL from hooks.slack.com/services/T0/B0/SLACKSECRET');
      },
    };
    const result = await deliver(
      channel,
      NOTIFICATION,
      { baseMs: 10, maxDelayMs: 10, giveUpAfterMs: 60_000 },
      () => {},
      () => false,
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.retriable).toBe(false);
    expect(!result.ok && result.error).not.toContain('SLACKSECRET');
  });

  it('to a DingTalk URL without a scheme fails at once, permanently, without the access token', async () => {
    const channel = createChannel({ name: 'ding', channel: 'dingtalk', settings: { url: 'env:DING' } } as never, {
      DING: 'https://oapi.dingtalk.com/robot/send?access_token=DINGSECRET',
    });
    // Start-up takes only a URL with a scheme; the channel itself must still survive one without.
    const { dingtalkChannel } = await import('../../../packages/notify/src/channels/dingtalk.ts');
    const bad = dingtalkChannel({ url: 'oapi.dingtalk.com/robot/send?access_token=DINGSECRET', secret: 'SEC' });
    const result = await attemptOnce(bad, NOTIFICATION);
    expect(result).toMatchObject({ ok: false, retriable: false });
    expect(JSON.stringify(result)).not.toContain('DINGSECRET');
    expect(channel.name).toBe('dingtalk');
  });

  it('to a Jira URL with user:password carries no password in its error', async () => {
    const { jiraChannel } = await import('../../../packages/notify/src/channels/jira.ts');
    const result = await attemptOnce(jiraChannel({ url: 'http://bob:hunter2@127.0.0.1:9/jira', user: 'bob', token: 'JIRATOKEN', project: 'OPS' }), {
      ...NOTIFICATION,
      alerts: [
        {
          id: 'a',
          fingerprint: 'fp',
          host: 'h',
          status: 'firing',
          severity: 'error',
          category: 'xid',
          summary: 's',
          startsAt: '',
          expected: false,
          evidence: [],
          labels: {},
        },
      ],
    });
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toMatch(/hunter2|JIRATOKEN/);
  });

  it('stops waiting out a backoff when the notifier stops', async () => {
    const controller = new AbortController();
    const failing: Channel = { name: 'webhook', send: async () => ({ ok: false, retriable: true, error: 'HTTP 500' }) };
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const result = await deliver(
      failing,
      NOTIFICATION,
      { baseMs: BACKOFF_MS, maxDelayMs: BACKOFF_MS, giveUpAfterMs: 3_600_000 },
      () => {},
      () => false,
      () => 1,
      controller.signal,
    );
    expect(result.ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(BACKOFF_MS / 20);
  });
});

describe('the notifier with a failing receiver', () => {
  it('stops within seconds, not after its backoff, and keeps the unsent page in the outbox', async () => {
    let calls = 0;
    const vendor: Server = createServer((req, res) => {
      calls += 1;
      req.resume();
      res.writeHead(500).end('down');
    });
    await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise((r) => {
          vendor.closeAllConnections();
          vendor.close(() => r());
        }),
    );
    const port = (vendor.address() as { port: number }).port;
    const routes = RoutesFile.parse({
      receivers: [{ name: 'pager', channel: 'pagerduty', settings: { url: `http://127.0.0.1:${port}/enqueue`, routing_key: 'K'.repeat(32) } }],
      route: { receiver: 'pager', page: true },
    });
    const bus = new MemoryBus();
    const store = new MemoryStore();
    const notifier = await startNotifier({
      bus,
      store,
      log,
      routes,
      env: {},
      retry: { baseMs: BACKOFF_MS, maxDelayMs: BACKOFF_MS, giveUpAfterMs: 3_600_000 },
      flushEveryMs: 50,
    });
    await bus.publish(TOPICS.alerts, [
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-1',
          source: 'test',
          data: {
            fingerprint: 'fp-stop',
            status: 'firing',
            severity: 'critical',
            category: 'fallen_off_bus',
            rule: 'gpu-absent',
            summary: 'lost',
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      ),
    ]);
    for (const deadline = Date.now() + 10_000; calls === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    expect(calls).toBeGreaterThan(0);
    const started = Date.now();
    await notifier.stop();
    expect(Date.now() - started).toBeLessThan(BACKOFF_MS / 20);
    expect(Object.keys(await store.hashGetAll('notifier:outbox'))).toHaveLength(1);
    const records = (await bus.read(TOPICS.notifications)).flatMap((m) => {
      const r = parseEnvelope(m.value);
      return r.ok && r.value.type === 'notification' ? [r.value.data] : [];
    });
    expect(records.some((r) => r.outcome === 'failed')).toBe(true);
    await bus.close();
  });
});

describe('a failing receiver, as the operator sees it', () => {
  it('logs one warning when a receiver starts failing and one line when it is back, not one per retry', async () => {
    let healthy = false;
    let calls = 0;
    const vendor: Server = createServer((req, res) => {
      calls += 1;
      req.resume();
      res.writeHead(healthy ? 202 : 500, { 'content-type': 'application/json' }).end(healthy ? '{"status":"success"}' : 'down');
    });
    await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise((r) => {
          vendor.closeAllConnections();
          vendor.close(() => r());
        }),
    );
    const port = (vendor.address() as { port: number }).port;
    const lines: string[] = [];
    const captured = createLogger({
      name: 'notifier',
      destination: new Writable({
        write(c, _e, done) {
          lines.push(String(c));
          done();
        },
      }),
    });
    const routes = RoutesFile.parse({
      receivers: [{ name: 'pager', channel: 'pagerduty', settings: { url: `http://127.0.0.1:${port}/enqueue`, routing_key: 'K'.repeat(32) } }],
      route: { receiver: 'pager', page: true },
    });
    const bus = new MemoryBus();
    const notifier = await startNotifier({
      bus,
      store: new MemoryStore(),
      log: captured,
      routes,
      env: {},
      retry: { baseMs: 20, maxDelayMs: 40, giveUpAfterMs: 60_000 },
      flushEveryMs: 20,
    });
    await bus.publish(TOPICS.alerts, [
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-1',
          source: 'test',
          data: {
            fingerprint: 'fp-warn',
            status: 'firing',
            severity: 'critical',
            category: 'fallen_off_bus',
            rule: 'gpu-absent',
            summary: 'lost',
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      ),
    ]);
    for (const deadline = Date.now() + 10_000; calls < 4 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    healthy = true;
    for (const deadline = Date.now() + 10_000; !lines.some((l) => l.includes('receiver_recovered')) && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 10));
    await notifier.stop();
    await bus.close();
    const events = lines.map((l) => (JSON.parse(l) as { msg: string }).msg).filter((m) => m.startsWith('receiver_'));
    expect(calls).toBeGreaterThanOrEqual(5);
    expect(events).toEqual(['receiver_failing', 'receiver_recovered']);
  });
});

describe("a destination's rate", () => {
  /** Sends taken in [0, untilMs) when one is offered every `everyMs`. */
  function taken(limiter: RateLimiter, everyMs: number, untilMs: number): number[] {
    const times: number[] = [];
    for (let t = 0; t < untilMs; t += everyMs) if (limiter.take(t)) times.push(t);
    return times;
  }

  it('per_minute 20 (DingTalk, WeCom) lets exactly 20 through in the first minute, not a burst plus a refill', () => {
    const times = taken(new RateLimiter({ perMinute: 20 }), 100, 60_000);
    expect(times).toHaveLength(20);
    // and never more than 20 in any sixty seconds after
    const later = taken(new RateLimiter({ perMinute: 20 }), 250, 300_000);
    for (const t of later) expect(later.filter((u) => u > t - 60_000 && u <= t).length).toBeLessThanOrEqual(20);
  });

  it("Feishu's defaults (5 a second, 100 a minute) allow 5 in the first second and 100 in the first minute", () => {
    const limit = rateLimitOf({ channel: 'feishu' })!;
    expect(limit).toEqual({ perSecond: 5, perMinute: 100 });
    expect(taken(new RateLimiter(limit), 10, 1_000)).toHaveLength(5);
    expect(taken(new RateLimiter(limit), 10, 60_000)).toHaveLength(100);
  });

  it("every chat vendor has a default; a receiver's own setting wins", () => {
    expect(rateLimitOf({ channel: 'dingtalk' })).toEqual({ perMinute: 20 });
    expect(rateLimitOf({ channel: 'wecom' })).toEqual({ perMinute: 20 });
    expect(rateLimitOf({ channel: 'slack' })).toEqual({ perSecond: 1, perMinute: 60 });
    expect(rateLimitOf({ channel: 'wecom', per_minute: 10 })).toEqual({ perMinute: 10 });
    expect(new RateLimiter({ perMinute: 20 }).waitMs(0)).toBe(0);
  });
});

/** A bus whose gpualert.notifications hangs (Kafka slow or away) until released; every other topic works. */
class StalledRecords extends MemoryBus {
  release: () => void = () => undefined;
  private readonly released = new Promise<void>((r) => (this.release = r));
  stalled = 0;
  override async publish(topic: string, messages: Parameters<MemoryBus['publish']>[1]): Promise<void> {
    if (topic === TOPICS.notifications) {
      this.stalled += 1;
      await this.released;
    }
    return super.publish(topic, messages);
  }
}

describe('the record of each delivery attempt', () => {
  it('never holds a page: with the delivery log stalled, a retried page and the next one are both delivered, and the log gets every attempt once it answers', async () => {
    const calls: string[] = [];
    const vendor: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const key = (JSON.parse(body) as { dedup_key: string }).dedup_key;
        calls.push(key);
        // the first page's first attempt fails: it is retried
        const fail = key === 'fp-a' && calls.filter((k) => k === 'fp-a').length === 1;
        res.writeHead(fail ? 500 : 202, { 'content-type': 'application/json' }).end(fail ? 'down' : '{"status":"success"}');
      });
    });
    await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise((r) => {
          vendor.closeAllConnections();
          vendor.close(() => r());
        }),
    );
    const port = (vendor.address() as { port: number }).port;
    const routes = RoutesFile.parse({
      receivers: [{ name: 'pager', channel: 'pagerduty', settings: { url: `http://127.0.0.1:${port}/enqueue`, routing_key: 'K'.repeat(32) } }],
      route: { receiver: 'pager', page: true },
    });
    const bus = new StalledRecords();
    const notifier = await startNotifier({
      bus,
      store: new MemoryStore(),
      log,
      routes,
      env: {},
      retry: { baseMs: 20, maxDelayMs: 40, giveUpAfterMs: 60_000 },
      flushEveryMs: 20,
    });
    cleanups.push(async () => {
      bus.release();
      await notifier.stop();
      await bus.close();
    });
    const alert = (fingerprint: string) =>
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-1',
          source: 'test',
          data: {
            fingerprint,
            status: 'firing',
            severity: 'critical',
            category: 'fallen_off_bus',
            rule: 'gpu-absent',
            summary: `lost ${fingerprint}`,
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      );
    await bus.publish(TOPICS.alerts, [alert('fp-a'), alert('fp-b')]);
    for (const deadline = Date.now() + 10_000; (calls.length < 3 || bus.stalled < 3) && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    // Every page went out while not one record could be written.
    expect([...calls].sort()).toEqual(['fp-a', 'fp-a', 'fp-b']);
    expect(bus.stalled).toBeGreaterThanOrEqual(3);
    expect(await bus.read(TOPICS.notifications)).toHaveLength(0);
    bus.release();
    const records = async () =>
      (await bus.read(TOPICS.notifications)).flatMap((m) => {
        const r = parseEnvelope(m.value);
        return r.ok && r.value.type === 'notification' && r.value.data.receiver === 'pager' ? [r.value.data] : [];
      });
    for (const deadline = Date.now() + 10_000; (await records()).length < 3 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 10));
    const a = (await records()).filter((r) => r.fingerprints.includes('fp-a')).sort((x, y) => x.attempt - y.attempt);
    expect(a.map((r) => [r.outcome, r.attempt, r.retry_in_ms !== undefined])).toEqual([
      ['failed', 1, true],
      ['sent', 2, false],
    ]);
    // the two attempts are one message, retried
    expect(a[0]?.notification_id).toBeTruthy();
    expect(a[1]?.notification_id).toBe(a[0]?.notification_id);
  });
});
