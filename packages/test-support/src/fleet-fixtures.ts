import { partitionFor } from '@gpualert/bus';
import { newEnvelope, type Envelope } from '@gpualert/schema';

/** The fleet tests' partitions of every topic (the in-process bus: member p mod 2 of two takes partition p). */
export const PARTITIONS = 4;
export const T0 = Date.parse('2026-11-30T08:00:00Z');

/** `count` hosts named `prefix-i` whose partition has the given parity: the hosts one of two engines owns. */
export function hostsOn(parity: 0 | 1, count: number, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i += 1) if (partitionFor(`${prefix}-${i}`, PARTITIONS) % 2 === parity) out.push(`${prefix}-${i}`);
  return out;
}

/** A host of cluster `east` on driver `driver`, at `at`. */
export const inventory = (host: string, driver: string, at = T0, id = `i-${host}`): Envelope =>
  newEnvelope({
    type: 'host.inventory',
    id,
    host,
    source: 'test',
    ts: new Date(at).toISOString(),
    labels: { cluster: 'east' },
    data: { gpu_model: 'NVIDIA H100', gpu_count: 0, driver_version: driver, cuda_version: '12.4', gpus: [] },
  });
