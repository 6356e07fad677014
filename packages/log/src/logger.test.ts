import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';

describe('createLogger', () => {
  it('writes JSON lines with the event and never the secrets', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ name: 'test', destination });
    log.info({ receiver: { name: 'pager', routing_key: 'R0UT1NG', secret: 'whsec_abc' }, token: 't0k' }, 'receiver_ready');
    const line = JSON.parse(lines[0]!) as Record<string, any>;
    expect(line.msg).toBe('receiver_ready');
    expect(line.service).toBe('test');
    expect(line.receiver.name).toBe('pager');
    expect(lines[0]).not.toMatch(/R0UT1NG|whsec_abc|t0k/);
    expect(line.receiver.routing_key).toBe('[redacted]');
  });

  it('redacts secrets in free text too: an error quoting a webhook URL, a broker password', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger({ name: 'test', destination });
    log.error(
      {
        error: 'Failed to parse URL from hooks.slack.com/services/T000/B000/XXXXSECRET',
        cause: new Error('connect to redis://admin:hunter2@redis:6379 failed'),
      },
      'send_failed',
    );
    expect(lines[0]).not.toMatch(/XXXXSECRET|hunter2/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'send_failed', error: expect.stringContaining('hooks.slack.com/services/[redacted]') });
  });
});
