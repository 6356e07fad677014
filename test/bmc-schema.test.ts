import { newEnvelope, parseEnvelope, MAX_FANS_PER_SAMPLE, type HostSampleData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';

/** The host layer's envelopes at the door: bounded lists, fixed counter names, names without control characters. */
const envelope = (data: HostSampleData) => JSON.stringify(newEnvelope({ type: 'host.sample', host: 'gpu-node-7', source: 'test', data }));
const fan = (i: number) => ({ name: `Fan ${i}`, rpm: 3_000, health: 'ok' as const });

describe('host.sample and bmc.event at the door', () => {
  it('takes a sample at the fan bound and refuses one past it, naming the field', () => {
    expect(parseEnvelope(envelope({ origin: 'redfish', fans: Array.from({ length: MAX_FANS_PER_SAMPLE }, (_, i) => fan(i)) })).ok).toBe(true);
    const over = parseEnvelope(envelope({ origin: 'redfish', fans: Array.from({ length: MAX_FANS_PER_SAMPLE + 1 }, (_, i) => fan(i)) }));
    expect(over.ok).toBe(false);
    expect(over.ok ? '' : over.error.message).toContain('fans');
  });

  it('refuses a counter outside the fixed list and a sensor name with an escape sequence', () => {
    const port = { device: 'mlx5_0', port: 1, state: 'active', phys_state: 'link_up', rate_gbps: 400, link_layer: 'infiniband' } as const;
    expect(parseEnvelope(envelope({ origin: 'sysfs', ib_ports: [{ ...port, counters: { symbol_error: 3 } }] })).ok).toBe(true);
    const unknown = parseEnvelope(envelope({ origin: 'sysfs', ib_ports: [{ ...port, counters: { made_up_counter: 1 } as never }] }));
    expect(unknown.ok).toBe(false);
    expect(parseEnvelope(envelope({ origin: 'ipmitool', fans: [{ ...fan(1), name: 'Fan\u001b[2J' }] })).ok).toBe(false);
  });

  it('takes a bmc.event as the collectors write one, and refuses one without an entry id', () => {
    const data = {
      entry_id: '29',
      log: 'sel',
      created: '2014-06-04T09:49:51.000Z',
      severity: 'error',
      message: 'Power Supply AC lost',
      sensor: 'Power Supply PS1 Status',
      asserted: true,
    } as const;
    expect(parseEnvelope(JSON.stringify(newEnvelope({ type: 'bmc.event', host: 'h', source: 't', data }))).ok).toBe(true);
    expect(parseEnvelope(JSON.stringify(newEnvelope({ type: 'bmc.event', host: 'h', source: 't', data: { ...data, entry_id: '' } }))).ok).toBe(false);
  });
});
