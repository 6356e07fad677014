import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { templateData } from './go-template-data.ts';
import { CompiledTemplate, TemplateError, TemplateSet } from './go-template.ts';
import type { Notification } from './notifier-core.ts';

/** Pieces templates are made of, so the generator reaches deep into the grammar, not only the lexer. */
const PIECES = [
  '{{',
  '}}',
  '{{-',
  '-}}',
  ' ',
  '.',
  '$',
  '$x',
  ':=',
  '=',
  '|',
  '(',
  ')',
  '"',
  '`',
  '/*',
  '*/',
  'if',
  'else',
  'end',
  'range',
  'with',
  'define',
  'template',
  'block',
  '.Status',
  '.Alerts',
  '.Firing',
  '.Labels',
  '.CommonLabels',
  '.GroupLabels',
  '.SortedPairs',
  '.Values',
  '.Remove',
  '.Names',
  'len',
  'eq',
  'gt',
  'and',
  'or',
  'not',
  'join',
  'toUpper',
  'reReplaceAll',
  'match',
  'printf',
  'index',
  'stringSlice',
  '"a"',
  '"(.*)"',
  '"%s"',
  '1',
  '-1',
  'true',
  'nil',
  '\n',
  'x',
  'constructor',
  '__proto__',
];

const data = templateData({
  id: 'n',
  receiver: 'r',
  group: 'g',
  reason: 'first',
  firing: 1,
  alerts: [
    {
      id: 'a',
      fingerprint: 'f',
      host: 'h',
      status: 'firing',
      severity: 'warning',
      category: 'other',
      summary: 's',
      startsAt: '2026-06-01T00:00:00.000Z',
      expected: false,
      evidence: [],
      labels: { alertname: 'A', constructor: 'c' },
    },
  ],
} satisfies Notification);

/** Expressions, some right for the data and some not. */
const EXPR = [
  '.Status',
  '.Alerts',
  '.Alerts.Firing',
  '.CommonLabels',
  '.CommonLabels.alertname',
  '.CommonLabels.constructor',
  '.GroupLabels.SortedPairs.Values',
  '$',
  '.',
  '"a"',
  '1',
  'true',
  'nil',
  'len',
  'toUpper',
  'join " "',
  'eq .Status "firing"',
  'gt (len .Alerts) 0',
  'index .CommonLabels "alertname"',
  'reReplaceAll "(a)" "$1$1"',
  'printf "%s"',
  '|',
  '.Labels',
  '.Nope',
  'stringSlice "a"',
];
const action = fc.array(fc.constantFrom(...EXPR), { minLength: 1, maxLength: 3 }).map((xs) => `{{ ${xs.join(' ')} }}`);
const structured = fc
  .array(
    fc.oneof(
      action,
      fc.constantFrom('text ', '\n', '{{- " " -}}'),
      fc
        .tuple(fc.constantFrom('if', 'range', 'with'), fc.constantFrom(...EXPR), fc.array(action, { maxLength: 3 }))
        .map(([k, e, body]) => `{{ ${k} ${e} }}${body.join('')}{{ else }}x{{ end }}`),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));

describe('hostile templates (fast-check)', () => {
  it('any text loads or is refused with a TemplateError and its line, and what loads renders or fails with one, within its bounds', () => {
    let renderedActions = 0;
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((p) => p.join('')),
        fc.string({ maxLength: 40 }),
        structured,
        (built, noise, shaped) => {
          for (const text of [built, noise, built + noise, shaped, shaped + built]) {
            let compiled: CompiledTemplate;
            try {
              compiled = CompiledTemplate.compile(text, new TemplateSet(), { file: '', line: 1 });
            } catch (error) {
              expect(error).toBeInstanceOf(TemplateError);
              expect((error as TemplateError).line).toBeGreaterThanOrEqual(0);
              continue;
            }
            try {
              expect(compiled.render(data).length).toBeLessThanOrEqual(64 * 1024);
              if (text.includes('{{')) renderedActions += 1;
            } catch (error) {
              expect(error).toBeInstanceOf(TemplateError);
            }
          }
        },
      ),
      { numRuns: 3_000 },
    );
    // The generator reaches templates that load and run, not only refusals.
    expect(renderedActions).toBeGreaterThan(20);
  });
});
