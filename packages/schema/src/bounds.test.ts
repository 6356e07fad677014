import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  eventTimeProblem,
  MAX_EVENT_AGE_MS,
  MAX_EVENT_LEAD_MS,
  MAX_GPU_INDEX,
  MAX_GPUS_PER_SAMPLE,
  MAX_HOST_LENGTH,
  MAX_HOSTS_PER_PROVIDER_EVENT,
  MAX_LABEL_NAME_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_LABELS,
} from './bounds.ts';
import { Envelope } from './envelope.ts';
import { isInert } from './inert-record.ts';
import { isCanonicalGpuSample } from './gpu-sample-fast-path.ts';
import { parseEnvelope } from './parse-envelope.ts';

const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 500);

function gpu(index: number): Record<string, unknown> {
  return {
    index,
    uuid: 'GPU-1',
    pci_bus: '0000:3b:00',
    name: 'NVIDIA H100',
    util_pct: 97,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: 61,
    mem_temp_c: 66,
    power_w: 640.5,
    power_limit_w: 700,
    sm_clock_mhz: 1980,
    mem_clock_mhz: 2619,
    fan_pct: null,
    pcie_gen: 5,
    pcie_gen_max: 5,
    pcie_width: 16,
    pcie_width_max: 16,
    ecc_sbe_volatile: 0,
    ecc_dbe_volatile: 0,
    ecc_sbe_aggregate: 0,
    ecc_dbe_aggregate: 0,
    remap_pending: false,
    remap_failure: false,
    throttle: ['sw_power_cap'],
    xid_last: null,
    nvlink_errors: 0,
    processes: 1,
  };
}

function sample(gpus = 2): Record<string, any> {
  return {
    id: 's1',
    ts: '2026-06-01T00:00:10.000Z',
    host: 'gpu-node-001',
    labels: { cluster: 'lab' },
    source: 'nvidia-smi/1',
    type: 'gpu.sample',
    data: { gpus: Array.from({ length: gpus }, (_, i) => gpu(i)) },
  };
}

function providerEvent(hosts: string[]): Record<string, unknown> {
  return {
    id: 'p1',
    ts: '2026-06-01T00:00:10.000Z',
    host: 'gpu-node-001',
    labels: {},
    source: 'intake/1',
    type: 'provider.event',
    data: { provider: 'generic', event_id: 'e1', kind: 'maintenance', status: 'scheduled', hosts, description: '', raw_id: 'e1' },
  };
}

const messageOf = (json: unknown) => {
  const result = parseEnvelope(JSON.stringify(json));
  return result.ok ? 'accepted' : result.error.message;
};

describe('bounds at the door, each refused with the field that broke it', () => {
  it(`a host of up to ${MAX_HOST_LENGTH} characters (a 300-character one was accepted, then dead-lettered by the engine)`, () => {
    expect(messageOf({ ...sample(), host: 'h'.repeat(MAX_HOST_LENGTH) })).toBe('accepted');
    expect(messageOf({ ...sample(), host: 'h'.repeat(300) })).toBe(`host: expected string of at most ${MAX_HOST_LENGTH}, got string "${'h'.repeat(57)}..."`);
    expect(messageOf(providerEvent(['ok', 'h'.repeat(MAX_HOST_LENGTH + 1)]))).toMatch(/^data\.hosts\.1: expected string of at most 253/);
  });

  it("no control character in a host: it would reach an operator's terminal as an escape sequence", () => {
    for (const host of ['evil\u001b[2J', 'a\nb', 'del\u007f', 'c1\u009b31m']) {
      const refused = parseEnvelope(JSON.stringify({ ...sample(), host }));
      expect(refused.ok, JSON.stringify(host)).toBe(false);
      expect(isCanonicalGpuSample({ ...sample(), host })).toBe(false);
      const notice = parseEnvelope(JSON.stringify(providerEvent(['fine', host])));
      expect(notice.ok ? 'accepted' : notice.error.path).toBe('data.hosts.1');
    }
    expect(parseEnvelope(JSON.stringify({ ...sample(), host: 'gpu-ñode-ü1' })).ok).toBe(true);
  });

  it(`at most ${MAX_GPUS_PER_SAMPLE} GPUs per sample, each index once`, () => {
    expect(messageOf(sample(MAX_GPUS_PER_SAMPLE))).toBe('accepted');
    expect(messageOf(sample(MAX_GPUS_PER_SAMPLE + 1))).toBe(`data.gpus: expected array of at most ${MAX_GPUS_PER_SAMPLE}, got an array`);
    const twice = sample(3);
    twice.data.gpus[2].index = 0;
    expect(messageOf(twice)).toBe('data.gpus.2.index: expected an index not already in this sample, got number 0');
  });

  it(`GPU indexes from 0 to ${MAX_GPU_INDEX}, in samples, kernel events and inventories`, () => {
    const last = sample(1);
    last.data.gpus[0].index = MAX_GPU_INDEX;
    expect(messageOf(last)).toBe('accepted');
    last.data.gpus[0].index = MAX_GPU_INDEX + 1;
    expect(messageOf(last)).toBe(`data.gpus.0.index: expected number of at most ${MAX_GPU_INDEX}, got number ${MAX_GPU_INDEX + 1}`);
    const xid = {
      id: 'k1',
      ts: '2026-06-01T00:00:10.000Z',
      host: 'h',
      labels: {},
      source: 's',
      type: 'kernel.event',
      data: { kind: 'xid', xid: 79, gpu: 1e9, message: 'm', severity: 'critical' },
    };
    expect(messageOf(xid)).toBe(`data.gpu: expected number of at most ${MAX_GPU_INDEX}, got number 1000000000`);
  });

  it(`at most ${MAX_HOSTS_PER_PROVIDER_EVENT} hosts per provider event`, () => {
    const hosts = (n: number) => Array.from({ length: n }, (_, i) => `h${i}`);
    expect(messageOf(providerEvent(hosts(MAX_HOSTS_PER_PROVIDER_EVENT)))).toBe('accepted');
    expect(messageOf(providerEvent(hosts(MAX_HOSTS_PER_PROVIDER_EVENT + 1)))).toBe(
      `data.hosts: expected array of at most ${MAX_HOSTS_PER_PROVIDER_EVENT}, got an array`,
    );
  });

  it(`at most ${MAX_LABELS} labels, names up to ${MAX_LABEL_NAME_LENGTH} and values up to ${MAX_LABEL_VALUE_LENGTH} characters, no label named __proto__`, () => {
    const labels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 'v']));
    expect(messageOf({ ...sample(), labels: labels(MAX_LABELS) })).toBe('accepted');
    expect(messageOf({ ...sample(), labels: labels(MAX_LABELS + 1) })).toBe(`labels: expected at most ${MAX_LABELS} labels, got an object`);
    expect(messageOf({ ...sample(), labels: { ['n'.repeat(MAX_LABEL_NAME_LENGTH + 1)]: 'v' } })).toMatch(/^labels\.n{57}\.\.\.: expected /);
    expect(messageOf({ ...sample(), labels: { job: 'v'.repeat(MAX_LABEL_VALUE_LENGTH + 1) } })).toMatch(
      /^labels\.job: expected string of at most 1024, got string "v{57}\.\.\."$/,
    );
    expect(
      parseEnvelope(`{"id":"s1","ts":"2026-06-01T00:00:10.000Z","host":"h","labels":{"__proto__":"x"},"source":"s","type":"kernel.line","data":{"line":"x"}}`),
    ).toMatchObject({
      ok: false,
      error: { path: 'labels.__proto__', message: 'labels.__proto__: expected a label name other than __proto__, got string "x"' },
    });
  });

  it('labels come back inert (inheriting nothing) from both paths: a label named constructor is data, toString is absent', () => {
    const slow = sample();
    slow.data.gpus[0].fan_pct = undefined; // not canonical: the full schema
    for (const json of [sample(), slow]) {
      const result = parseEnvelope(JSON.stringify({ ...json, labels: { constructor: 'c', job: 'j' } }));
      if (!result.ok) throw new Error(result.error.message);
      expect(isInert(result.value.labels)).toBe(true);
      expect(result.value.labels.constructor).toBe('c');
      expect(result.value.labels.toString).toBeUndefined();
    }
  });

  it(`event time within ${MAX_EVENT_LEAD_MS / 60_000} min ahead and ${MAX_EVENT_AGE_MS / 86_400_000} days behind its receipt`, () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    expect(eventTimeProblem('2026-06-01T00:04:59Z', now)).toBeUndefined();
    expect(eventTimeProblem('2026-05-25T00:00:01Z', now)).toBeUndefined();
    expect(eventTimeProblem('9999-12-31T23:59:59Z', now)).toBe(
      "ts: expected at most 5 min after receipt (2026-06-01T00:00:00.000Z), got 9999-12-31T23:59:59Z: the source's clock is ahead",
    );
    expect(eventTimeProblem('1970-01-01T00:00:00Z', now)).toMatch(/^ts: expected at most 7 days before receipt .*: the source's clock is behind$/);
  });
});

describe('the gpu.sample fast path keeps to the same bounds as the schema', () => {
  it('true on the fast path means valid in the full schema with the same value, for samples on either side of every bound', () => {
    const mutation = fc.oneof(
      fc.record({ host: fc.integer({ min: MAX_HOST_LENGTH - 2, max: MAX_HOST_LENGTH + 2 }) }),
      fc.record({ gpus: fc.integer({ min: MAX_GPUS_PER_SAMPLE - 1, max: MAX_GPUS_PER_SAMPLE + 1 }), duplicate: fc.boolean() }),
      fc.record({ labels: fc.integer({ min: MAX_LABELS - 1, max: MAX_LABELS + 1 }) }),
      fc.record({
        name: fc.integer({ min: MAX_LABEL_NAME_LENGTH - 1, max: MAX_LABEL_NAME_LENGTH + 1 }),
        value: fc.integer({ min: MAX_LABEL_VALUE_LENGTH - 1, max: MAX_LABEL_VALUE_LENGTH + 1 }),
      }),
      fc.record({ key: fc.constantFrom('__proto__', 'constructor', '', 'toString') }),
      fc.record({ index: fc.integer({ min: MAX_GPU_INDEX - 1, max: MAX_GPU_INDEX + 2 }) }),
    );
    fc.assert(
      fc.property(mutation, (m) => {
        const json = sample(2);
        if ('host' in m) json.host = 'h'.repeat(m.host);
        if ('gpus' in m) {
          json.data.gpus = Array.from({ length: m.gpus }, (_, i) => gpu(i));
          if (m.duplicate) json.data.gpus[1].index = 0;
        }
        if ('labels' in m) json.labels = Object.fromEntries(Array.from({ length: m.labels }, (_, i) => [`l${i}`, 'v']));
        if ('index' in m) json.data.gpus[1].index = m.index;
        if ('name' in m) json.labels = { ['n'.repeat(m.name)]: 'v'.repeat(m.value) };
        const parsedJson = 'key' in m ? JSON.parse(JSON.stringify(json).replace('"cluster"', JSON.stringify(m.key))) : json;
        const fast = isCanonicalGpuSample(parsedJson);
        const full = Envelope.safeParse(parsedJson);
        // Both ways agree on every bound (the fast path may decline what is valid, never accept what is not).
        if (fast) return full.success && JSON.stringify(full.data) === JSON.stringify(parsedJson);
        return true;
      }),
      { numRuns: RUNS },
    );
  });
});
