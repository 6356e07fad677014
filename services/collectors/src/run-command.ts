import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  /** null when the command could not start, was killed, or wrote past its bound. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** It wrote more than `maxOutputBytes` on a stream: killed, and its output dropped (a part would parse as something it is not). */
  readonly overflow?: true;
  /** Why it could not start (ENOENT, EACCES…). */
  readonly spawnError?: string;
}

/** No nvidia-smi, lspci or ipmitool answer comes near this: a command writing more is broken or hostile. */
export const DEFAULT_MAX_COMMAND_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Runs a command with a deadline and a bound on what it writes: a hung nvidia-smi is killed, never
 * waited on forever, and one that writes without end is killed at `maxOutputBytes` per stream,
 * never read whole. Output is decoded once at the end, so no character is split between reads.
 */
export function runCommand(
  file: string,
  args: readonly string[],
  timeoutMs: number,
  maxOutputBytes = DEFAULT_MAX_COMMAND_OUTPUT_BYTES,
): Promise<CommandResult> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let timedOut = false;
    let spawnError: string | undefined;
    // Its own process group, so a timeout kills whatever the command started too.
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let settled = false;
    const settle = (result: CommandResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const killAll = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString('utf8');
    const overflowed = () => {
      killAll();
      settle({ stdout: '', stderr: '', exitCode: null, timedOut: false, overflow: true });
    };
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxOutputBytes) return overflowed();
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      errBytes += chunk.length;
      if (errBytes > maxOutputBytes) return overflowed();
      err.push(chunk);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killAll();
      // Do not wait for pipes a grandchild may still hold open.
      settle({ stdout: text(out), stderr: text(err), exitCode: null, timedOut: true });
    }, timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = error.code ?? error.message;
    });
    child.on('close', (code) => {
      settle({ stdout: text(out), stderr: text(err), exitCode: timedOut ? null : code, timedOut, ...(spawnError ? { spawnError } : {}) });
    });
  });
}
