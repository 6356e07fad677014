import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '@gpualert/config';
import { ERROR_CODES, GpualertError, type ErrorCode } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { CliError, cliFailure, EXIT } from './cli-error.ts';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The catalogue's rows: `| \`CODE\` | meaning | yes/no | exit | what to do |`. */
function catalogue(): Map<string, { retriable: boolean; exit: number }> {
  const rows = new Map<string, { retriable: boolean; exit: number }>();
  for (const line of readFileSync(join(ROOT, 'docs/errors.md'), 'utf8').split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const code = /^`(GA-[A-Z-]+)`$/.exec(cells[1] ?? '')?.[1];
    if (code) rows.set(code, { retriable: cells[3] === 'yes', exit: Number(cells[4]) });
  }
  return rows;
}

/** Every non-test TypeScript file of the packages and services (bounded: source trees only). */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    if (depth > 8) return;
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (name === 'node_modules' || name === 'fixtures') continue;
      if (statSync(path).isDirectory()) walk(path, depth + 1);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
    }
  };
  for (const top of ['packages', 'services']) for (const name of readdirSync(join(ROOT, top))) walk(join(ROOT, top, name, 'src'), 0);
  return out;
}

/** Classes that never leave their module (a body cut short, caught a few lines down): not errors anyone sees. */
const LOCAL_CONTROL_FLOW = new Set(['BodyTooLarge', 'TooLarge', 'GpualertError']);

describe('every error code is in the catalogue (docs/errors.md)', () => {
  it('lists each code of the registry once, with its retriable flag and the exit status the CLI gives it', () => {
    const rows = catalogue();
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const [code, row] of rows) {
      const known = ERROR_CODES[code as ErrorCode];
      expect(row.retriable, code).toBe(known.retriable);
      expect(row.exit, code).toBe(cliFailure(new GpualertError(code as ErrorCode, 'x')).exitCode);
    }
  });

  it('every GA- code written in the source is in the registry and the catalogue, and no error class bypasses GpualertError', () => {
    const rows = catalogue();
    const files = sources();
    expect(files.length).toBeGreaterThan(100);
    const seen = new Set<string>();
    const bare: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const [, code] of text.matchAll(/'(GA-[A-Z0-9-]+)'/g)) seen.add(code!);
      for (const [, name] of text.matchAll(/class (\w+) extends Error\b/g))
        if (!LOCAL_CONTROL_FLOW.has(name!)) bare.push(`${file.slice(ROOT.length)}: ${name}`);
    }
    expect(seen.size).toBeGreaterThan(5);
    expect([...seen].filter((code) => !rows.has(code) || !Object.hasOwn(ERROR_CODES, code))).toEqual([]);
    expect(bare).toEqual([]);
  });
});

describe("the CLI reports errors as error[CODE] with the code's exit status", () => {
  it('keeps the exit codes people script against: bad input 2, a failure 1, away 75', () => {
    expect(cliFailure(new CliError('gpualert timeline: --from must be before --to'))).toEqual({
      code: 'GA-CLI-USAGE',
      exitCode: EXIT.usage,
      text: 'error[GA-CLI-USAGE]: gpualert timeline: --from must be before --to',
    });
    expect(cliFailure(new CliError('gpualert intake: port 9468 is in use', EXIT.failed)).exitCode).toBe(1);
    expect(cliFailure(new ConfigError('invalid config: KAFKA_BROKERS (environment): expected host:port')).text).toBe(
      'error[GA-CONFIG-INVALID]: invalid config: KAFKA_BROKERS (environment): expected host:port',
    );
    expect(cliFailure(new GpualertError('GA-INFRA-UNAVAILABLE', 'Redis at redis://…: Connection is closed.')).exitCode).toBe(75);
    expect(cliFailure(new Error('wrapped', { cause: new ConfigError('bad') })).code).toBe('GA-CONFIG-INVALID');
    expect(cliFailure(new TypeError('x is undefined'))).toEqual({ code: 'GA-INTERNAL', exitCode: 1, text: 'error[GA-INTERNAL]: x is undefined' });
  });

  it("a CliError wrapping a GpualertError reports the cause's code, and every line of a message is its own error line", () => {
    const wrapped = new CliError('gpualert silence add: a silence needs a comment', EXIT.usage, {
      cause: new GpualertError('GA-SILENCE-INVALID', 'a silence needs a comment'),
    });
    expect(cliFailure(wrapped)).toMatchObject({ code: 'GA-SILENCE-INVALID', exitCode: 2 });
    expect(cliFailure(new CliError('gpualert rules check: a.yaml:3: bad\ngpualert rules check: b.yaml:9: worse')).text.split('\n')).toEqual([
      'error[GA-CLI-USAGE]: gpualert rules check: a.yaml:3: bad',
      'error[GA-CLI-USAGE]: gpualert rules check: b.yaml:9: worse',
    ]);
  });
});
