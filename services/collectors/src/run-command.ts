import { spawn } from 'node:child_process';

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  /** null when the command could not start or was killed. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Why it could not start (ENOENT, EACCES…). */
  readonly spawnError?: string;
}

/** Runs a command with a deadline; a hung nvidia-smi is killed, never waited on forever. */
export function runCommand(file: string, args: readonly string[], timeoutMs: number): Promise<CommandResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let spawnError: string | undefined;
    // Its own process group, so a timeout kills whatever the command started too.
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let settled = false;
    const settle = (result: CommandResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      // Do not wait for pipes a grandchild may still hold open.
      settle({ stdout, stderr, exitCode: null, timedOut: true });
    }, timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = error.code ?? error.message;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      settle({ stdout, stderr, exitCode: timedOut ? null : code, timedOut, ...(spawnError ? { spawnError } : {}) });
    });
  });
}
