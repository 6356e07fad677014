/**
 * Every cut at a vendor's limit goes through here: it cuts between whole characters (grapheme
 * clusters, so neither half an emoji nor a flag or a ZWJ sequence torn apart) and marks the cut.
 */

/** Appended to a cut text so the reader sees it went on (one character, 3 UTF-8 bytes). */
export const CUT_MARK = '…';

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/**
 * Units segmented at a time: V8's segment iterator costs grow with the square of the text it walks
 * (64k units: 0.7 s), so a long text is walked in pieces of this many.
 */
const PIECE = 512;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A lone surrogate (hostile input, or a cut elsewhere) becomes U+FFFD: it is no character in any vendor's encoding. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}

/**
 * The longest prefix of whole characters whose sizes add up to at most `budget`, from a window of
 * `budget + 2` UTF-16 units: every character costs at least one unit in every count we cut by
 * (UTF-16 units, UTF-8 bytes, JSON bytes), so no more than `budget` units can fit, and whether a
 * character ends at a unit up to `budget` is decided by what stands before it and the one code
 * point after it (UAX #29), which the window holds whole. So a cut costs in proportion to the
 * limit, not the text: a 600k-character group summary is segmented no further than its limit.
 */
function fitting(text: string, budget: number, size: (character: string) => number): string {
  const window = wellFormed(text.slice(0, budget + 2));
  let used = 0;
  let end = 0;
  let piece = PIECE;
  while (end < window.length) {
    // Segmentation may start again at any boundary: the rules that look back (GB11's emoji ZWJ
    // sequence, GB9c's conjunct, GB12/13's regional-indicator pairs) never look across one, since a
    // boundary before a regional indicator means an even count of them before it.
    const start = end;
    const slice = window.slice(start, start + piece + 2);
    const toTheEnd = start + slice.length >= window.length;
    for (const { segment, index } of graphemes.segment(slice)) {
      if (!toTheEnd && index + segment.length > piece) break;
      const cost = size(segment);
      if (used + cost > budget) return window.slice(0, end);
      used += cost;
      end = start + index + segment.length;
    }
    if (toTheEnd) break;
    // One character longer than a piece (a zalgo run): look further before going on.
    piece = end === start ? piece * 2 : PIECE;
  }
  return window.slice(0, end);
}

/** UTF-8 bytes: what WeCom, Feishu and DingTalk count. */
export const utf8Bytes = (s: string) => Buffer.byteLength(s);
/** Bytes once written inside a JSON string: JSON escapes each code point alone, so sizes add up. */
export const jsonBytes = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;

/**
 * At most `max` characters as JavaScript and Java count them (UTF-16 units, never fewer than code
 * points, so within every vendor's count), cut between whole characters, with CUT_MARK when cut.
 */
export function cutChars(text: string, max: number): string {
  if (text.length <= max) return wellFormed(text);
  const budget = max - CUT_MARK.length;
  return budget < 0 ? '' : `${fitting(text, budget, (s) => s.length)}${CUT_MARK}`;
}

/** At most `maxBytes` of UTF-8 (for vendors that count bytes: WeCom, Feishu, DingTalk), cut between whole characters. */
export function cutBytes(text: string, maxBytes: number): string {
  // A UTF-16 unit is at least one UTF-8 byte: a text longer than the limit in units is over it.
  if (text.length <= maxBytes) {
    const clean = wellFormed(text);
    if (utf8Bytes(clean) <= maxBytes) return clean;
  }
  const budget = maxBytes - utf8Bytes(CUT_MARK);
  return budget < 0 ? '' : `${fitting(text, budget, utf8Bytes)}${CUT_MARK}`;
}

/**
 * At most `maxBytes` once written as a JSON string (quotes, backslashes and control characters
 * escaped, the two quotes counted), for vendors that bound the whole request body.
 */
export function cutJsonBytes(text: string, maxBytes: number): string {
  const room = maxBytes - 2;
  if (text.length <= room) {
    const clean = wellFormed(text);
    if (jsonBytes(clean) <= room) return clean;
  }
  const budget = room - jsonBytes(CUT_MARK);
  return budget < 0 ? '' : `${fitting(text, budget, jsonBytes)}${CUT_MARK}`;
}
