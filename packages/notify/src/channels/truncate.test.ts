import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CUT_MARK, cutBytes, cutChars, cutJsonBytes, wellFormed } from './truncate.ts';

/** Runs per property: modest in CI, GPUALERT_FUZZ_RUNS for a long run. */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 500);
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Text as alerts bring it: CJK, emoji (with ZWJ and flags), markup, lone surrogates. */
const text = fc.array(fc.oneof(
  fc.string({ unit: 'grapheme' }), fc.constantFrom('告警', '🔥', '👩‍👩‍👧', '🇯🇵', '<!channel>', '&', '\n', '\uD83D', 'é'), fc.string({ unit: 'binary' }),
), { maxLength: 40 }).map((parts) => parts.join(''));

describe('cutting text at a vendor limit', () => {
  it('never leaves half an emoji where a UTF-16 slice does (Slack 2,900, PagerDuty 1,024, Opsgenie 130, ServiceNow 160, DingTalk 60)', () => {
    const summary = `x${'🔥'.repeat(3000)}`;
    for (const limit of [2900, 1024, 130, 160, 60]) {
      expect(LONE.test(summary.slice(0, limit))).toBe(true); // what .slice() did
      const cut = cutChars(summary, limit);
      expect(LONE.test(cut)).toBe(false);
      expect(cut.length).toBeLessThanOrEqual(limit);
      expect(cut.endsWith(CUT_MARK)).toBe(true);
    }
    expect(cutChars('short', 130)).toBe('short');
    expect(cutChars('👩‍👩‍👧👩‍👩‍👧', 10)).toBe('👩‍👩‍👧…'); // a family is one character, never torn apart
  });

  it('within a character budget: a prefix of whole characters, never over the limit', () => {
    fc.assert(fc.property(text, fc.integer({ min: 1, max: 300 }), (s, max) => {
      const cut = cutChars(s, max);
      expect(cut.length).toBeLessThanOrEqual(max);
      expect(LONE.test(cut)).toBe(false);
      const kept = cut.endsWith(CUT_MARK) && cut !== wellFormed(s) ? cut.slice(0, -CUT_MARK.length) : cut;
      expect(wellFormed(s).startsWith(kept)).toBe(true);
    }), { numRuns: RUNS });
  });

  it('within a byte budget (WeCom, Feishu, DingTalk count UTF-8 bytes), also as JSON', () => {
    fc.assert(fc.property(text, fc.integer({ min: 4, max: 600 }), (s, max) => {
      const cut = cutBytes(s, max);
      expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(max);
      expect(LONE.test(cut)).toBe(false);
      expect(Buffer.from(cut).toString('utf8')).toBe(cut);
      expect(Buffer.byteLength(JSON.stringify(cutJsonBytes(s, max)))).toBeLessThanOrEqual(max);
    }), { numRuns: RUNS });
  });
});
