import { Writable } from 'node:stream';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { printAlerts } from './alert-printer.ts';

describe('the embedded console', () => {
  it('prints an alert whose text carries escape sequences and newlines as one inert line', async () => {
    const bus = new MemoryBus({ partitions: 1 });
    let out = '';
    const sink = new Writable({ write(chunk, _e, done) { out += String(chunk); done(); } });
    const printer = await printAlerts(bus, sink);
    const summary = 'desc\u001b[31mRED\u001b[0m\nFAKE 02:00:00  CRITICAL  other-host  [xid]  forged line\r\u001b[1A\u001b[2Kerased';
    await bus.publish(TOPICS.alerts, [envelopeMessage(newEnvelope({
      type: 'alert', host: 'gpu-node-1', source: 'test', data: {
        fingerprint: 'f1', status: 'firing', severity: 'critical', category: 'xid', rule: 'r', summary, action: 'reboot\u001b]0;PWNED\u0007', starts_at: new Date().toISOString(), evidence: [],
      },
    }))]);
    const deadline = Date.now() + 5_000;
    while (!out.includes('PWNED') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await printer.stop();
    await bus.close();
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out.split('\n').filter((l) => l.includes('FAKE'))).toEqual([expect.stringMatching(/gpu-node-1 +\[xid\] +desc\\x1b\[31mRED\\x1b\[0m\\x0aFAKE/)]);
    expect(out).toContain('→ reboot\\x1b]0;PWNED\\x07');
  });
});
