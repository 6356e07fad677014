import type { Batch, BatchContext, ConsumedEnvelope } from '@gpualert/bus';
import { newHostState, type HostState } from '@gpualert/engine';
import { newEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { inFastLane, waitForSamples } from './fast-lane.ts';

const T = Date.parse('2026-12-01T03:00:00Z');
const xid = (host: string, at: number): Envelope =>
  newEnvelope({
    type: 'kernel.event',
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    data: { kind: 'xid', xid: 79, pci_bus: '0000:4b:00', severity: 'critical', message: 'NVRM: Xid (PCI:0000:4b:00): 79', count: 1 },
  });
const batch = (topic: string, envelopes: Envelope[]): Batch => ({
  topic,
  partition: 0,
  lag: 0,
  items: envelopes.map((envelope, offset): ConsumedEnvelope => ({
    envelope,
    message: { topic, partition: 0, offset, key: envelope.host, value: Buffer.alloc(0), headers: {}, timestamp: 0 },
  })),
});
const host = (name: string, lastSample?: number): HostState => ({ ...newHostState(name, {}, 'default'), ...(lastSample === undefined ? {} : { lastSample }) });

describe('the fast lane', () => {
  const hosts = new Map([
    ['live', host('live', T - 5_000)],
    ['behind', host('behind', T - 10 * 60_000)],
    ['new', host('new')],
  ]);
  const hostOf = (name: string) => hosts.get(name);

  it("takes a fault whose host's samples are judged up to about its time", () => {
    expect(inFastLane(batch(TOPICS.kernelEvents, [xid('live', T)]), hostOf)).toBe(true);
  });

  it('leaves in its place a fault of a host not yet sampled, one whose samples wait in a backlog, a batch with either, and samples', () => {
    expect(inFastLane(batch(TOPICS.kernelEvents, [xid('new', T)]), hostOf)).toBe(false);
    expect(inFastLane(batch(TOPICS.kernelEvents, [xid('unknown', T)]), hostOf)).toBe(false);
    expect(inFastLane(batch(TOPICS.kernelEvents, [xid('behind', T)]), hostOf)).toBe(false);
    expect(inFastLane(batch(TOPICS.kernelEvents, [xid('live', T), xid('behind', T)]), hostOf)).toBe(false);
    expect(inFastLane(batch(TOPICS.gpuSamples, [xid('live', T)]), hostOf)).toBe(false);
  });
});

describe('a fault read by a lane of its own', () => {
  const hosts = new Map([['live', host('live', T - 5_000)]]);
  const hostOf = (name: string) => hosts.get(name);
  /** A context whose samples lane says `caught` when asked, and which records who asked for what. */
  const context = (caught: boolean) => {
    const asked: string[] = [];
    const value: BatchContext = {
      publish: () => Promise.resolve(),
      caughtUp: (topic) => Promise.resolve(void asked.push(topic)).then(() => caught),
    };
    return { asked, value };
  };

  it("goes first at once when its host is live, without asking the samples' lane", async () => {
    const { asked, value } = context(false);
    expect(await waitForSamples(batch(TOPICS.kernelEvents, [xid('live', T)]), value, hostOf)).toBe(true);
    expect(asked).toEqual([]);
  });

  it("otherwise asks the samples' lane about its partition, and goes first only when that lane says its samples are judged", async () => {
    const caught = context(true);
    expect(await waitForSamples(batch(TOPICS.kernelEvents, [xid('new', T)]), caught.value, hostOf)).toBe(true);
    expect(caught.asked).toEqual([TOPICS.gpuSamples]);
    const unknown = context(false);
    expect(await waitForSamples(batch(TOPICS.providerEvents, [xid('new', T)]), unknown.value, hostOf)).toBe(false);
    expect(unknown.asked).toEqual([TOPICS.gpuSamples]);
  });

  it('leaves the samples in their place, asking nothing', async () => {
    const { asked, value } = context(true);
    expect(await waitForSamples(batch(TOPICS.gpuSamples, [xid('live', T)]), value, hostOf)).toBe(false);
    expect(asked).toEqual([]);
  });
});
