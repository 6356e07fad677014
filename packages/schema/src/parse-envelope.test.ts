import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalPciBus } from './pci-bus.ts';
import { parseEnvelope } from './parse-envelope.ts';

const recording = new URL('../../../test/fixtures/recordings/example-thermal-xid13-gcp.jsonl', import.meta.url);
const lines = readFileSync(recording, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '');

function mutate(line: string, change: (json: Record<string, any>) => void): string {
  const json = JSON.parse(line) as Record<string, any>;
  change(json);
  return JSON.stringify(json);
}

function errorOf(input: string | Uint8Array) {
  const result = parseEnvelope(input);
  if (result.ok) throw new Error('expected a parse error');
  return result.error;
}

describe('parseEnvelope over the example recording', () => {
  it('parses every line into a typed envelope', () => {
    expect(lines.length).toBe(125);
    const types = new Map<string, number>();
    for (const line of lines) {
      const result = parseEnvelope(line);
      if (!result.ok) throw new Error(result.error.message);
      types.set(result.value.type, (types.get(result.value.type) ?? 0) + 1);
    }
    expect(Object.fromEntries(types)).toEqual({ 'gpu.sample': 120, 'kernel.line': 3, 'host.inventory': 1, 'provider.raw': 1 });
  });

  it('keeps unsupported values as null and the throttle reasons as names', () => {
    const first = parseEnvelope(lines.find((l) => l.includes('"gpu.sample"'))!);
    if (!first.ok || first.value.type !== 'gpu.sample') throw new Error('no sample');
    const gpu = first.value.data.gpus[1]!;
    expect(gpu.fan_pct).toBeNull();
    expect(gpu.throttle).toEqual(['sw_power_cap']);
    expect(gpu.pci_bus).toBe('0000:2a:00');
  });

  it('accepts bytes as well as strings', () => {
    expect(parseEnvelope(Buffer.from(lines[0]!)).ok).toBe(true);
  });
});

describe('parseEnvelope on broken lines names the field', () => {
  const sample = lines.find((l) => l.includes('"gpu.sample"'))!;

  it('a metric of the wrong type', () => {
    const error = errorOf(mutate(sample, (j) => (j.data.gpus[0].temp_c = 'hot')));
    expect(error.path).toBe('data.gpus.0.temp_c');
    expect(error.expected).toBe('number');
    expect(error.got).toBe('string "hot"');
    expect(error.message).toBe('data.gpus.0.temp_c: expected number, got string "hot"');
  });

  it('a missing host', () => {
    const error = errorOf(mutate(sample, (j) => delete j.host));
    expect(error.path).toBe('host');
    expect(error.got).toBe('nothing');
  });

  it('an unknown type', () => {
    const error = errorOf(mutate(sample, (j) => (j.type = 'gpu.sampel')));
    expect(error.path).toBe('type');
    expect(error.message).toContain('gpu.sampel');
  });

  it('a timestamp that is not ISO-8601', () => {
    const error = errorOf(mutate(sample, (j) => (j.ts = '21 Jan 2019 09:00:43 GMT')));
    expect(error.path).toBe('ts');
    expect(error.expected).toBe('an ISO-8601 timestamp');
  });

  it('an unknown throttle reason', () => {
    const error = errorOf(mutate(sample, (j) => (j.data.gpus[2].throttle = ['too_hot'])));
    expect(error.path).toBe('data.gpus.2.throttle.0');
  });

  it('a PCI address that is not canonical', () => {
    const error = errorOf(mutate(sample, (j) => (j.data.gpus[0].pci_bus = '00000000:18:00.0')));
    expect(error.path).toBe('data.gpus.0.pci_bus');
  });

  it('truncated JSON, empty input and bytes that are not UTF-8', () => {
    expect(errorOf(sample.slice(0, 80)).code).toBe('not_json');
    expect(errorOf('').message).toMatch(/^message: expected one JSON object, got an empty message/);
    expect(errorOf(new Uint8Array([0xff, 0xfe, 0x00])).code).toBe('not_utf8');
  });

  it('never throws on arbitrary input', () => {
    for (const input of ['null', '[]', '42', '"x"', '{"type":null}', '{"__proto__":{"type":"alert"}}', '\u0000']) {
      expect(parseEnvelope(input).ok).toBe(false);
    }
  });
});

describe('canonicalPciBus', () => {
  it('folds every source form into dddd:bb:dd', () => {
    expect(canonicalPciBus('00000000:3B:00.0')).toBe('0000:3b:00');
    expect(canonicalPciBus('PCI:0000:3b:00')).toBe('0000:3b:00');
    expect(canonicalPciBus('0018:01:00')).toBe('0018:01:00');
    expect(canonicalPciBus('3b:00.0')).toBe('0000:3b:00');
    expect(canonicalPciBus('not a bus')).toBeNull();
  });
});
