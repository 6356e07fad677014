import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Envelope } from './envelope.ts';
import { GPU_METRIC_KINDS, isCanonicalGpuSample } from './gpu-sample-fast-path.ts';
import { GpuMetrics } from './metrics.ts';
import { parseEnvelope } from './parse-envelope.ts';

function sample(): Record<string, any> {
  const gpu = {
    index: 3,
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
  return {
    id: 's1',
    ts: '2026-06-01T00:00:10.000Z',
    host: 'gpu-node-001',
    labels: { cluster: 'lab' },
    source: 'nvidia-smi/1',
    type: 'gpu.sample',
    data: { gpus: [gpu, { ...gpu, index: 4 }] },
  };
}

/** Values a field might wrongly hold: other types, edge numbers, strings that almost match. */
const oddValue = fc.oneof(
  fc.constantFrom(null, undefined, true, 'x', '', -1, 1.5, Number.NaN, Infinity, [], {}, ['gpu_idle', 'bogus'], '0000:3B:00', '2026-13-01T00:00:00Z', 'GPU-2'),
  fc.integer(),
  fc.double(),
  fc.string(),
);

describe('the gpu.sample fast path', () => {
  it('knows every field of GpuMetrics, and no other', () => {
    expect(Object.keys(GPU_METRIC_KINDS).sort()).toEqual(Object.keys(GpuMetrics.shape).sort());
  });

  it('checks every field of the table by its kind: each valid passes, each of the wrong kind is refused', () => {
    const valid = { index: 0, id: 'GPU-1', pci: '0000:3b:00', text: 'x', gauge: 1.5, count: 2, flag: true, throttle: ['sw_power_cap'], job: { job: '4242' } };
    const wrong = { index: -1, id: '', pci: '0000:3B:00', text: 1, gauge: 'x', count: 1.5, flag: 'yes', throttle: ['bogus'], job: { extra: 'x' } };
    const gpu = Object.fromEntries(Object.entries(GPU_METRIC_KINDS).map(([name, kind]) => [name, valid[kind]]));
    const json = sample();
    json.data.gpus = [gpu];
    expect(isCanonicalGpuSample(json)).toBe(true);
    for (const [name, kind] of Object.entries(GPU_METRIC_KINDS)) {
      const broken = sample();
      broken.data.gpus = [{ ...gpu, [name]: wrong[kind] }];
      expect(isCanonicalGpuSample(broken), name).toBe(false);
      const { [name]: _dropped, ...without } = gpu;
      broken.data.gpus = [name === 'job' ? without : { ...without, extra: null }];
      expect(isCanonicalGpuSample(broken), `${name} missing`).toBe(name === 'job');
    }
  });

  it('accepts a canonical sample as the full schema returns it', () => {
    const json = sample();
    expect(isCanonicalGpuSample(json)).toBe(true);
    expect(json).toEqual(Envelope.parse(json));
  });

  it('never accepts what the full schema refuses or would change: one field of a sample set to anything', () => {
    const fields = [...Object.keys(sample()), ...Object.keys(GPU_METRIC_KINDS).map((k) => `gpu.${k}`), 'data.error', 'gpu.extra', 'labels.x', 'extra'];
    fc.assert(
      fc.property(fc.constantFrom(...fields), oddValue, (field, value) => {
        const json = sample();
        if (field.startsWith('gpu.')) json.data.gpus[1][field.slice(4)] = value;
        else if (field === 'data.error') json.data.error = value;
        else if (field === 'labels.x') json.labels.x = value;
        else json[field] = value;
        if (!isCanonicalGpuSample(json)) return true;
        const full = Envelope.safeParse(json);
        return full.success && JSON.stringify(full.data) === JSON.stringify(json);
      }),
      { numRuns: 5_000 },
    );
  });

  it('accepts a GPU attributed to a job as the full schema returns it, and any odd attribution only through the schema', () => {
    const json = sample();
    json.data.gpus[0].job = {
      job: '4242',
      job_user: 'alice',
      job_name: 'llama-70b',
      namespace: 'ml',
      pod: 'trainer-0',
      pod_uid: '6f1b0c6a',
      container: 'abc123',
    };
    expect(isCanonicalGpuSample(json)).toBe(true);
    expect(json).toEqual(Envelope.parse(json));
    const jobKeys = ['job', 'job_user', 'job_name', 'namespace', 'pod', 'pod_uid', 'container', 'extra', '__proto__'];
    fc.assert(
      fc.property(fc.constantFrom(...jobKeys), fc.oneof(oddValue, fc.constantFrom('a\u001b[2J', 'x'.repeat(257))), (key, value) => {
        const odd = sample();
        odd.data.gpus[1].job = JSON.parse(`{${JSON.stringify(key)}: ${JSON.stringify(value) ?? 'null'}}`);
        if (!isCanonicalGpuSample(odd)) return true;
        const full = Envelope.safeParse(odd);
        return full.success && JSON.stringify(full.data) === JSON.stringify(odd);
      }),
      { numRuns: 3_000 },
    );
    const refused = sample();
    refused.data.gpus[0].job = { job: 'x'.repeat(257) };
    expect(isCanonicalGpuSample(refused)).toBe(false);
    expect(parseEnvelope(JSON.stringify(refused)).ok).toBe(false);
  });

  it('leaves everything else to the full schema, errors worded as before', () => {
    const json = sample();
    json.data.gpus[0].temp_c = 'hot';
    const result = parseEnvelope(JSON.stringify(json));
    expect(result.ok ? '' : result.error.message).toBe('data.gpus.0.temp_c: expected number, got string "hot"');
    const partial = sample();
    delete partial.data.gpus[0].fan_pct; // a missing field reads as null: valid, through the schema
    const parsed = parseEnvelope(JSON.stringify(partial));
    expect(parsed.ok && parsed.value.type === 'gpu.sample' ? parsed.value.data.gpus[0]!.fan_pct : 'refused').toBeNull();
  });
});
