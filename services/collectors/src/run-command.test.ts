import { describe, expect, it } from 'vitest';
import { runCommand } from './run-command.ts';

describe('runCommand', () => {
  it('kills a command that writes without end at its output bound, and hands back none of it', async () => {
    const started = Date.now();
    // `yes` writes forever; unbounded, it would be read until the 60 s deadline, growing all the while.
    const result = await runCommand('yes', ['a line of output'], 60_000, 1024 * 1024);
    expect(result).toMatchObject({ overflow: true, exitCode: null, timedOut: false, stdout: '' });
    expect(Date.now() - started).toBeLessThan(30_000); // a ceiling that only tells "killed at the bound" from "read until the deadline"
  });

  it('decodes the output once: a character split between two reads arrives whole', async () => {
    // One ASCII byte, then 100,000 two-byte characters: pipe reads of 64 KiB end inside a character.
    const result = await runCommand(process.execPath, ['-e', `process.stdout.write('x' + '°'.repeat(100000))`], 30_000);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`x${'°'.repeat(100_000)}`);
    expect(result.stdout).not.toContain('\uFFFD');
  });

  it('within its bound, a command runs to its end as before', async () => {
    const result = await runCommand(process.execPath, ['-e', 'process.stdout.write("ok"); process.stderr.write("warn"); process.exit(3)'], 30_000, 1024);
    expect(result).toEqual({ stdout: 'ok', stderr: 'warn', exitCode: 3, timedOut: false });
  });
});
