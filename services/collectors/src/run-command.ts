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
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = error.code ?? error.message;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, exitCode: timedOut ? null : code, timedOut, ...(spawnError ? { spawnError } : {}) });
    });
  });
}
