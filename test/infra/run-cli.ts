import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const BIN = resolve(import.meta.dirname, '../../bin/gpualert.mjs');

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `gpualert …` to completion, as a user would from a shell. */
export function runCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: options.env ?? cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** Starts a long-running `gpualert …`; the caller stops it. */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv = cleanEnv()): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return Object.assign(child, { output: () => output });
}

/** The environment without this machine's gpualert settings, so a test states what it uses. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) {
    // GPUALERT_CLOCK_OFFSET_MS is the test run's own clock (test/infra/clock-ahead.mjs), not a setting: it stays.
    if ((key.startsWith('GPUALERT_') && key !== 'GPUALERT_CLOCK_OFFSET_MS') || key === 'KAFKA_BROKERS' || key === 'REDIS_URL') delete env[key];
  }
  return { ...env, ...extra };
}
