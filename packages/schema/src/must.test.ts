import { describe, expect, it } from 'vitest';
import { isGpualertError } from './gpualert-error.ts';
import { must } from './must.ts';

describe('must', () => {
  it('returns a present value, falsy ones included', () => {
    expect(must(0, 'zero')).toBe(0);
    expect(must('', 'empty')).toBe('');
    expect(must(false, 'false')).toBe(false);
  });

  it('throws GA-INTERNAL naming the broken invariant for undefined and null', () => {
    for (const missing of [undefined, null]) {
      let thrown: unknown;
      try {
        must(missing, 'the host was just added');
      } catch (error) {
        thrown = error;
      }
      expect(isGpualertError(thrown) && thrown.code).toBe('GA-INTERNAL');
      expect(String(thrown)).toContain('the host was just added');
    }
  });
});
