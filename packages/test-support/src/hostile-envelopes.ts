import fc from 'fast-check';

/**
 * Envelopes as an attacker or a careless collector would write them, for the property suites and
 * the bench. Each is JSON text, so it enters where real messages do, through `parseEnvelope`.
 */

/** Names that are members of every plain object. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', '__defineGetter__', 'isPrototypeOf'] as const;

/** The host the properties keep judging while the hostile messages come; no arbitrary yields it. */
export const SENTINEL_HOST = 'sentinel-gpu-node';

const oddText = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\u0000', '🔥', 'gpu-node-001', 'a'.repeat(253), 'b'.repeat(254), 'c'.repeat(5_000)) },
  { weight: 1, arbitrary: fc.string({ minLength: 240, maxLength: 320 }) },
);
const host = oddText.filter((h) => h !== SENTINEL_HOST);

const extreme = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1e21, 99.999, 100, 101),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: 0, max: 200 }),
);
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 4 });

/** 1970 to 9999: the whole range an ISO-8601 timestamp can name, weighted towards now. */
const timestamp = fc
  .oneof(
    fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }),
    fc.date({ min: new Date('2026-05-31T00:00:00Z'), max: new Date('2026-06-02T00:00:00Z'), noInvalidDate: true }),
  )
  .map((d) => d.toISOString());

/** Labels as an object that keeps a `__proto__` key as its own (what JSON.parse makes of one). */
const labels = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom('job', 'cluster', 'role', 'rack', ...PROTOTYPE_KEYS), oddText), oddText), { maxLength: 6 })
  .chain((pairs) =>
    fc.oneof(
      { weight: 9, arbitrary: fc.constant(pairs) },
      { weight: 1, arbitrary: fc.constant(Array.from({ length: 70 }, (_, i): [string, string] => [`l${i}`, 'v'])) },
    ),
  )
  .map((pairs) => Object.fromEntries(pairs));

const pciBus = fc.constantFrom('0000:3b:00', '0000:18:00', '0000:29:00', '0000:3B:00', 'nonsense', null);
const gpuIndex = fc.oneof(
  { weight: 9, arbitrary: fc.integer({ min: 0, max: 7 }) },
  { weight: 1, arbitrary: fc.constantFrom(255, 256, 1e9, Number.MAX_SAFE_INTEGER, -1, 1.5) },
);

const gpu = fc.record({
  index: gpuIndex,
  uuid: maybe(fc.constantFrom('GPU-1', '__proto__', '')),
  pci_bus: pciBus,
  name: maybe(oddText),
  util_pct: maybe(extreme),
  mem_util_pct: maybe(extreme),
  mem_used_mib: maybe(extreme),
  mem_total_mib: maybe(extreme),
  temp_c: maybe(extreme),
  mem_temp_c: maybe(extreme),
  power_w: maybe(extreme),
  power_limit_w: maybe(extreme),
  sm_clock_mhz: maybe(extreme),
  mem_clock_mhz: maybe(extreme),
  fan_pct: maybe(extreme),
  pcie_gen: maybe(extreme),
  pcie_gen_max: maybe(extreme),
  pcie_width: maybe(extreme),
  pcie_width_max: maybe(extreme),
  ecc_sbe_volatile: maybe(extreme),
  ecc_dbe_volatile: maybe(extreme),
  ecc_sbe_aggregate: maybe(extreme),
  ecc_dbe_aggregate: maybe(extreme),
  remap_pending: maybe(fc.boolean()),
  remap_failure: maybe(fc.boolean()),
  throttle: maybe(fc.subarray(['gpu_idle', 'sw_power_cap', 'hw_slowdown', 'hw_thermal_slowdown'])),
  xid_last: maybe(extreme),
  nvlink_errors: maybe(extreme),
  processes: maybe(extreme),
});

/** Mostly a machine's handful of GPUs, sometimes the bound and past it (each with its own index, as collectors write them). */
const gpus = fc.oneof(
  { weight: 8, arbitrary: fc.array(gpu, { maxLength: 8 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(gpu, fc.constantFrom(256, 257, 1_000))
      .map(([g, n]) => Array.from({ length: n }, (_, i) => ({ ...g, index: i, util_pct: (i * 37) % 101, temp_c: 40 + (i % 50) }))),
  },
);

const data = fc.oneof(
  fc.record({ type: fc.constant('gpu.sample'), data: fc.record({ gpus }) }),
  fc.record({
    type: fc.constant('gpu.sample'),
    data: fc.record({
      gpus,
      error: fc.record({
        code: fc.constantFrom('gpu_lost', 'timeout', 'command_failed'),
        message: oddText,
        pci_bus: fc.constantFrom('0000:3b:00', '0000:18:00'),
      }),
    }),
  }),
  fc.record({
    type: fc.constant('kernel.event'),
    data: fc.record(
      {
        kind: fc.constantFrom('xid', 'fallen_off_bus', 'ecc', 'nvlink', 'host', 'oom_kill'),
        xid: fc.constantFrom(13, 31, 48, 79, 94, 119, 1e9),
        gpu: fc.option(gpuIndex, { nil: undefined }),
        pci_bus: fc.option(fc.constantFrom('0000:3b:00', '0000:18:00'), { nil: undefined }),
        message: oddText,
        severity: fc.constantFrom('info', 'warning', 'error', 'critical'),
        count: fc.option(extreme, { nil: undefined }),
      },
      { requiredKeys: ['kind', 'message', 'severity'] },
    ),
  }),
  fc.record({
    type: fc.constant('kernel.line'),
    data: fc.record({
      line: fc.oneof(
        oddText,
        fc.constantFrom('[ 88213.412000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.', 'NVRM: Xid (PCI:0000:18:00): 48, pid=2, DBE'),
      ),
    }),
  }),
  fc.record({
    type: fc.constant('provider.event'),
    data: fc.record(
      {
        provider: fc.constantFrom('aws', 'gcp', 'generic'),
        event_id: oddText.filter((s) => s.length > 0),
        kind: fc.constantFrom('maintenance', 'terminate', 'reboot'),
        status: fc.constantFrom('scheduled', 'started', 'completed', 'cancelled'),
        hosts: fc.oneof(
          fc.array(host, { maxLength: 4 }),
          fc.constantFrom(1_000, 1_001, 20_000).map((n) => Array.from({ length: n }, (_, i) => `h${i}`)),
        ),
        window_start: fc.option(timestamp, { nil: undefined }),
        window_end: fc.option(timestamp, { nil: undefined }),
        description: oddText,
        raw_id: oddText,
      },
      { requiredKeys: ['provider', 'event_id', 'kind', 'status', 'hosts', 'description', 'raw_id'] },
    ),
  }),
  fc.record({
    type: fc.constant('provider.raw'),
    data: fc.record({
      provider: fc.constant('generic'),
      payload: fc.record({
        event_id: oddText,
        kind: fc.constant('maintenance'),
        status: fc.constantFrom('scheduled', 'completed'),
        hosts: fc.array(host, { maxLength: 3 }),
      }),
    }),
  }),
  fc.record({
    type: fc.constant('host.inventory'),
    data: fc.record(
      {
        gpu_model: oddText,
        gpu_count: extreme,
        driver_version: oddText,
        cuda_version: oddText,
        provider: fc.option(oddText, { nil: undefined }),
        gpus: fc.array(
          fc.record({
            index: gpuIndex,
            uuid: fc.constantFrom('GPU-1', '__proto__'),
            pci_bus: fc.constantFrom('0000:3b:00', '0000:18:00', '0000:29:00'),
            name: oddText,
          }),
          { maxLength: 8 },
        ),
      },
      { requiredKeys: ['gpu_model', 'gpu_count', 'driver_version', 'cuda_version', 'gpus'] },
    ),
  }),
);

/** One hostile envelope as the JSON text a consumer would receive. */
export const hostileEnvelope: fc.Arbitrary<string> = fc
  .tuple(fc.oneof(fc.uuid(), oddText), timestamp, host, labels, data)
  .map(([id, ts, h, l, d]) => JSON.stringify({ id, type: d.type, ts, host: h, labels: l, source: 'fuzz/1', data: d.data }));
