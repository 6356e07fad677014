const RFC_1123 = /^(?:[A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} (?:GMT|UTC|[+-]\d{4})$/;
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * Every time format the providers write becomes ISO-8601 UTC: RFC 1123 (`Sat, 05 Jun 2016
 * 15:10:09 GMT`), AWS IMDS (`21 Jan 2019 09:00:43 GMT`), RFC 3339 with offsets. Undefined for
 * anything else (empty strings, documentation placeholders).
 */
export function toIsoUtc(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (!RFC_1123.test(text) && !RFC_3339.test(text)) return undefined;
  // A zone-less RFC 3339 time is UTC by the providers' convention.
  const normal = RFC_3339.test(text) && !/(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) ? `${text}Z` : text;
  const ms = Date.parse(normal.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** ISO-8601 durations as OCI writes them (`P1D`, `PT2H30M`, `P1DT12H`) → milliseconds. */
export function isoDurationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value.trim());
  if (!match || value.trim() === 'P' || value.trim().endsWith('T')) return undefined;
  const [, w, d, h, m, s] = match;
  return ((Number(w ?? 0) * 7 + Number(d ?? 0)) * 86_400 + Number(h ?? 0) * 3_600 + Number(m ?? 0) * 60 + Number(s ?? 0)) * 1000;
}

export function addMs(iso: string | undefined, ms: number | undefined): string | undefined {
  if (iso === undefined || ms === undefined) return undefined;
  return new Date(Date.parse(iso) + ms).toISOString();
}
