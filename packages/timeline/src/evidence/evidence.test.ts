import { newEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { assembleEvidence, EVIDENCE_BOUNDS } from './evidence.ts';
import { evidenceFiles, scrubSecrets } from './export-evidence.ts';
import { ustar } from './ustar.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');
const query = { host: 'h1', from: T0, to: T0 + 86_400_000 };

function xid(i: number): Envelope {
  return newEnvelope({
    type: 'kernel.event',
    id: `x${i}`,
    host: 'h1',
    source: 't',
    ts: new Date(T0 + i * 1_000).toISOString(),
    data: { kind: 'xid', xid: 13, gpu: 0, severity: 'warning', message: 'NVRM: Xid 13' },
  });
}

describe('evidence', () => {
  it('keeps the newest of a list past its bound, and the README says what was cut', () => {
    const count = EVIDENCE_BOUNDS.faults + 5;
    const result = assembleEvidence({ inventories: [], envelopes: Array.from({ length: count }, (_, i) => xid(i)), dropped: new Map(), missing: [] }, query);
    if (!('evidence' in result)) throw new Error(result.problem);
    expect(result.evidence.faults).toHaveLength(EVIDENCE_BOUNDS.faults);
    expect(result.evidence.faults[0]?.envelope_id).toBe('x5');
    expect(result.evidence.truncated).toContain(`Xid and ECC history lines: the newest ${EVIDENCE_BOUNDS.faults} of ${count} are kept`);
    const readme = String(evidenceFiles(result.evidence, T0, 'embedded')[0]?.content);
    expect(readme).toContain(`- Cut: Xid and ECC history lines: the newest ${EVIDENCE_BOUNDS.faults} of ${count} are kept.`);
    expect(readme).toContain('unknown provider: contact your operator.');
  });

  it('scrubs a secret as written, inside JSON and inside HTML, and what redactSecrets knows', () => {
    const secret = 'a&b<"c>-token-9';
    const text = [secret, JSON.stringify({ v: secret }), 'a&amp;b&lt;&quot;c&gt;-token-9', 'https://hooks.slack.com/services/T0/B0/SEKRET'].join('\n');
    const out = scrubSecrets(text, [secret, 'short']);
    expect(out).not.toMatch(/token-9|SEKRET/);
    expect(out.match(/\[redacted\]/g)).toHaveLength(4);
  });

  it('packs only names of its own: a name with .. or a leading / is a bug, not a path', () => {
    expect(() => ustar('gpualert-evidence', [{ name: '../x', content: '' }], T0)).toThrow(/not one of ours/);
    expect(() => ustar('gpualert-evidence', [{ name: '/etc/passwd', content: '' }], T0)).toThrow(/not one of ours/);
    const tar = ustar('gpualert-evidence', [{ name: 'README.md', content: 'hi' }], T0);
    expect(tar.length % 512).toBe(0);
    expect(tar.subarray(512 + 257, 512 + 262).toString()).toBe('ustar');
  });
});
