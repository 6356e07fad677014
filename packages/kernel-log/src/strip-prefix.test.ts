import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stripPrefix } from './strip-prefix.ts';

const lines = readFileSync(new URL('../../../test/fixtures/kernel/timestamp-prefixes.txt', import.meta.url), 'utf8').split('\n');

describe('stripPrefix over every prefix in the fixtures', () => {
  it('takes apart [uptime]', () => {
    const l = stripPrefix(lines[0]!, 2026);
    expect(l.uptimeS).toBeCloseTo(171167.620236, 6);
    expect(l.message).toMatch(/^NVRM: Xid \(PCI:0009:01:00\): 149,/);
  });
  it('takes apart dmesg -T as UTC', () => {
    const l = stripPrefix(lines[1]!, 2026);
    expect(new Date(l.wallMs!).toISOString()).toBe('2025-02-23T16:24:18.000Z');
    expect(l.message.startsWith('NVRM: Xid')).toBe(true);
  });
  it('takes apart dmesg --decode --time-format iso (comma before the microseconds)', () => {
    const l = stripPrefix(lines[2]!, 2026);
    expect(new Date(l.wallMs!).toISOString()).toBe('2025-01-21T04:41:44.287Z');
    expect(l.message.startsWith('NVRM: Xid (PCI:0000:38:00): 43')).toBe(true);
  });
  it('takes apart ISO with a host and kernel:', () => {
    const l = stripPrefix(lines[3]!, 2026);
    expect(new Date(l.wallMs!).toISOString()).toBe('2024-01-15T10:30:45.123Z');
    expect(l.message.startsWith('NVRM: Xid')).toBe(true);
  });
  it('takes apart syslog, with the year it leaves out, and the uptime after it', () => {
    const l = stripPrefix(lines[4]!, 2026);
    expect(new Date(l.wallMs!).toISOString()).toBe('2026-04-28T13:48:01.000Z');
    expect(l.uptimeS).toBeCloseTo(36020.497806, 6);
    expect(l.message.startsWith('CPU0: Core temperature')).toBe(true);
  });
  it('takes apart journalctl short-iso (offset without a colon)', () => {
    const l = stripPrefix(lines[5]!, 2026);
    expect(new Date(l.wallMs!).toISOString()).toBe('2026-09-08T01:00:00.000Z');
    expect(l.message).toBe('NVRM: Xid (PCI:0000:01:00): 79');
  });
  it('takes apart /dev/kmsg records with their sequence number', () => {
    const l = stripPrefix(lines[6]!, 2026);
    expect(l.seq).toBe(3964);
    expect(l.uptimeS).toBeCloseTo(206.764307, 6);
    expect(l.message).toBe('nvidia-nvswitch2: open (major=510)');
    expect(stripPrefix('6,1093,4096000,-,caller=T1;nvidia 0000:3b:00.0: enabling device', 2026).message).toBe('nvidia 0000:3b:00.0: enabling device');
  });
  it('takes apart a printk level, and the caller id after the uptime', () => {
    expect(stripPrefix(lines[7]!, 2026).message.startsWith('CPU: 24 PID: 1364')).toBe(true);
    expect(stripPrefix('[  130.456] [ T1946] NVRM: Xid (PCI:0000:01:00): 79', 2026).message).toBe('NVRM: Xid (PCI:0000:01:00): 79');
  });
  it('marks lines that begin with white space as continuations', () => {
    const l = stripPrefix('               NVRM: fallen off the bus and is not responding to commands.', 2026);
    expect(l.continuation).toBe(true);
    expect(l.message).toBe('NVRM: fallen off the bus and is not responding to commands.');
  });
});
