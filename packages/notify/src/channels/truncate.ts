/**
 * Every cut at a vendor's limit goes through here: it cuts between whole characters (grapheme
 * clusters, so neither half an emoji nor a flag or a ZWJ sequence torn apart) and marks the cut.
 */

/** Appended to a cut text so the reader sees it went on (one character, 3 UTF-8 bytes). */
export const CUT_MARK = '…';

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A lone surrogate (hostile input, or a cut elsewhere) becomes U+FFFD: it is no character in any vendor's encoding. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}

/**
 * At most `max` characters as JavaScript and Java count them (UTF-16 units, never fewer than code
 * points, so within every vendor's count), cut between whole characters, with CUT_MARK when cut.
 */
export function cutChars(text: string, max: number): string {
  const clean = wellFormed(text);
  if (clean.length <= max) return clean;
  const budget = max - CUT_MARK.length;
  let end = 0;
  for (const { segment, index } of graphemes.segment(clean)) {
    if (index + segment.length > budget) break;
    end = index + segment.length;
  }
  return budget < 0 ? '' : `${clean.slice(0, end)}${CUT_MARK}`;
}

/** At most `maxBytes` of UTF-8 (for vendors that count bytes: WeCom, Feishu, DingTalk), cut between whole characters. */
export function cutBytes(text: string, maxBytes: number): string {
  const clean = wellFormed(text);
  if (Buffer.byteLength(clean) <= maxBytes) return clean;
  const budget = maxBytes - Buffer.byteLength(CUT_MARK);
  let bytes = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(clean)) {
    const size = Buffer.byteLength(segment);
    if (bytes + size > budget) break;
    bytes += size;
    end = index + segment.length;
  }
  return budget < 0 ? '' : `${clean.slice(0, end)}${CUT_MARK}`;
}

/**
 * At most `maxBytes` once written as a JSON string (quotes and backslashes doubled), for vendors
 * that bound the whole request body: cut by bytes, then again by what the escapes added.
 */
export function cutJsonBytes(text: string, maxBytes: number): string {
  let budget = maxBytes - 2;
  let cut = cutBytes(text, budget);
  for (let over = Buffer.byteLength(JSON.stringify(cut)) - maxBytes; over > 0 && budget > 0; over = Buffer.byteLength(JSON.stringify(cut)) - maxBytes) {
    budget -= over;
    cut = cutBytes(text, budget);
  }
  return cut;
}
