import { describe, expect, it } from 'vitest';
import { prettyLine } from './pretty.ts';

describe('prettyLine', () => {
  it('reads like a tool: time, level, service, event, fields', () => {
    const line = prettyLine(
      JSON.stringify({ level: 40, time: '2026-11-30T21:14:03.000Z', service: 'intake', msg: 'intake_has_no_credentials', port: 9468, note: 'two words' }),
      false,
    );
    expect(line).toBe('21:14:03 WARN  intake  intake_has_no_credentials  port=9468 note="two words"\n');
  });

  it('never passes a control character through to the terminal, in the event or in a field', () => {
    const evil = 'x\u001b[2J\u001b]0;PWNED\u0007\r\u001b[1A\u001b[2K';
    const line = prettyLine(
      JSON.stringify({ level: 50, time: '2026-11-30T21:14:03.000Z', service: 'up', msg: `failed: ${evil}\nFAKE line`, host: evil }),
      true,
    );
    const withoutOwnColour = line.replace(/\u001b\[31m|\u001b\[0m/g, '');
    expect(withoutOwnColour).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(line.split('\n')).toHaveLength(2); // one line and its end
    expect(line).toContain('\\u001b[2J');
  });
});
