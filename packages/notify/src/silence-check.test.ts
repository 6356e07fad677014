import { describe, expect, it } from 'vitest';
import { checkSilence, MAX_SILENCE_MS } from './silence-check.ts';

const NOW = Date.parse('2026-06-01T00:00:00Z');
const ok = { matchers: ['host="h1"'], durationMs: 3_600_000, createdBy: 'bo', comment: 'rack move' };

describe('checkSilence', () => {
  it('takes a bounded silence with an author and a matcher that names something', () => {
    const checked = checkSilence(ok, NOW);
    expect(checked).toMatchObject({ ok: true, value: { startsAt: NOW, endsAt: NOW + 3_600_000 } });
  });

  it("refuses silences that would match every alert (Alertmanager's rule)", () => {
    for (const matchers of [['host=~".*"'], ['nosuchlabel=""'], ['severity!="nope"'], ['host=~".*"', 'x!~"y"']]) {
      const checked = checkSilence({ ...ok, matchers }, NOW);
      expect(checked.ok).toBe(false);
      expect(!checked.ok && checked.error).toMatch(/does not match the empty string/);
    }
    expect(checkSilence({ ...ok, matchers: ['host=~".*"', 'host="h1"'] }, NOW).ok).toBe(true);
  });

  it('refuses an empty author', () => {
    expect(checkSilence({ ...ok, createdBy: '  ' }, NOW)).toEqual({ ok: false, error: 'a silence needs an author (created_by, --author)' });
  });

  it('refuses lengths past the maximum or without a real end date, saying so', () => {
    for (const durationMs of [1e308 * 1000, 1e13 * 1000, 9999999999999 * 3_600_000, Infinity, Number.NaN, -1, 0, MAX_SILENCE_MS + 1]) {
      const checked = checkSilence({ ...ok, durationMs }, NOW);
      expect(checked.ok, String(durationMs)).toBe(false);
      expect(!checked.ok && checked.error).toMatch(/at most 90 days|positive, finite/);
    }
    const longest = checkSilence({ ...ok, durationMs: MAX_SILENCE_MS }, NOW);
    expect(longest.ok && new Date(longest.value.endsAt).toISOString()).toBe('2026-08-30T00:00:00.000Z');
  });
});
