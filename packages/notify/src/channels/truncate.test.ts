import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CUT_MARK, cutBytes, cutChars, cutJsonBytes, wellFormed } from './truncate.ts';

/** Runs per property: modest in CI, GPUALERT_FUZZ_RUNS for a long run. */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 500);
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Text as alerts bring it: CJK, emoji (with ZWJ and flags), markup, lone surrogates. */
const text = fc
  .array(
    fc.oneof(fc.string({ unit: 'grapheme' }), fc.constantFrom('告警', '🔥', '👩‍👩‍👧', '🇯🇵', '<!channel>', '&', '\n', '\uD83D', 'é'), fc.string({ unit: 'binary' })),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

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
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 300 }), (s, max) => {
        const cut = cutChars(s, max);
        expect(cut.length).toBeLessThanOrEqual(max);
        expect(LONE.test(cut)).toBe(false);
        const kept = cut.endsWith(CUT_MARK) && cut !== wellFormed(s) ? cut.slice(0, -CUT_MARK.length) : cut;
        expect(wellFormed(s).startsWith(kept)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('within a byte budget (WeCom, Feishu, DingTalk count UTF-8 bytes), also as JSON', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 4, max: 600 }), (s, max) => {
        const cut = cutBytes(s, max);
        expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(max);
        expect(LONE.test(cut)).toBe(false);
        expect(Buffer.from(cut).toString('utf8')).toBe(cut);
        expect(Buffer.byteLength(JSON.stringify(cutJsonBytes(s, max)))).toBeLessThanOrEqual(max);
      }),
      { numRuns: RUNS },
    );
  });
});

/** What cutting did before pieces: every character of the whole text segmented, the longest prefix that fits kept. */
function wholeTextCut(text: string, budget: number, size: (s: string) => number): string {
  if (budget < 0) return '';
  const clean = wellFormed(text);
  let used = 0;
  let end = 0;
  for (const { segment, index } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(clean)) {
    if (used + size(segment) > budget) break;
    used += size(segment);
    end = index + segment.length;
  }
  return `${clean.slice(0, end)}${CUT_MARK}`;
}

describe('a cut costs in proportion to its limit, not to the text', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** Counts the UTF-16 units handed to a grapheme segmenter while `cut` runs. */
  function segmented(cut: () => string): { units: number; cut: string } {
    let units = 0;
    const real = Intl.Segmenter.prototype.segment;
    vi.spyOn(Intl.Segmenter.prototype, 'segment').mockImplementation(function (this: Intl.Segmenter, input: string) {
      units += input.length;
      return real.call(this, input);
    });
    const result = cut();
    vi.restoreAllMocks();
    return { units, cut: result };
  }

  it('a 600,000-character group summary is segmented no further than about its limit (counted)', () => {
    const line = 'gpu-node-0042 GPU 3: Xid 79 "GPU has fallen off the bus" \\ 温度 🔥👩‍👩‍👧🇯🇵\n';
    const huge = line.repeat(Math.ceil(600_000 / line.length));
    expect(huge.length).toBeGreaterThanOrEqual(600_000);
    for (const [name, cut, limit] of [
      ['cutChars', cutChars, 4_000],
      ['cutBytes', cutBytes, 20_000],
      ['cutJsonBytes', cutJsonBytes, 512 * 1024],
    ] as const) {
      const { units, cut: result } = segmented(() => cut(huge, limit));
      expect(result.endsWith(CUT_MARK), name).toBe(true);
      // It looked (the count sees segmentation), and no further than the limit and the pieces' overlaps.
      expect(units, name).toBeGreaterThanOrEqual(Math.min(limit, huge.length) / 8);
      expect(units, name).toBeLessThanOrEqual(limit * 1.25 + 1_024);
    }
  });

  it('keeps exactly what segmenting the whole text keeps, across piece boundaries (flags, families, zalgo)', () => {
    const long = fc
      .tuple(text, fc.constantFrom('🇯🇵', '👩‍👩‍👧', 'e\u0301'.repeat(300), 'a', '\r\n'), fc.integer({ min: 1, max: 400 }))
      // At most 20,000 units: past every limit tried (3,000), so every cut crosses piece boundaries,
      // and bounded, so the reference (segmenting the whole text) cannot take a minute on a busy machine.
      .map(([s, unit, n]) => (s + unit.repeat(n)).repeat(1 + (n % 3)).slice(0, 20_000));
    fc.assert(
      fc.property(long, fc.integer({ min: 4, max: 3_000 }), (s, max) => {
        const charsBudget = max - CUT_MARK.length;
        const bytesBudget = max - Buffer.byteLength(CUT_MARK);
        if (s.length > max) expect(cutChars(s, max)).toBe(wholeTextCut(s, charsBudget, (c) => c.length));
        if (Buffer.byteLength(wellFormed(s)) > max) expect(cutBytes(s, max)).toBe(wholeTextCut(s, bytesBudget, (c) => Buffer.byteLength(c)));
        const json = (c: string) => Buffer.byteLength(JSON.stringify(c)) - 2;
        if (json(wellFormed(s)) > max - 2) expect(cutJsonBytes(s, max)).toBe(wholeTextCut(s, max - 2 - json(CUT_MARK), json));
      }),
      { numRuns: Math.max(50, RUNS / 5) },
    );
  });
});
