import { execFile } from 'node:child_process';

/** What one run of a program gave: its exit, its output (bounded), or why it did not run. */
export interface FileRun {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
  /** `timeout`: killed at the deadline; `spawn`: not started (ENOENT, EACCES); `exit`: ran and failed. */
  readonly failure?: 'timeout' | 'spawn' | 'exit';
  readonly code?: number | string;
}

/** Output read from one run at most: sinfo of 100,000 nodes is a few MB. */
export const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/**
 * Runs a program with its arguments as a list: no shell, so nothing in an argument is ever read
 * as a command, a glob or a redirection. Killed at `timeoutMs`. `env` is the whole environment of
 * the run (default: this process's, inherited).
 */
export function runFile(file: string, args: readonly string[], options: { timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<FileRun> {
  return new Promise((resolve) => {
    execFile(
      file,
      [...args],
      {
        timeout: options.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: MAX_OUTPUT_BYTES,
        encoding: 'utf8',
        shell: false,
        ...(options.env ? { env: options.env } : {}),
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ ok: true, stdout, stderr });
        const e = error as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
        const failure = e.killed === true || e.signal === 'SIGKILL' ? 'timeout' : typeof e.code === 'string' ? 'spawn' : 'exit';
        resolve({ ok: false, stdout: String(stdout ?? ''), stderr: String(stderr ?? ''), failure, ...(e.code !== undefined ? { code: e.code } : {}) });
      },
    );
  });
}

/** The last line of what a failed run said, for a report (one line, at most 300 characters). */
export function lastLine(run: FileRun): string {
  const text = (run.stderr.trim() || run.stdout.trim()).split('\n').pop() ?? '';
  const line = text.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 300);
  if (run.failure === 'timeout') return `timed out${line ? `: ${line}` : ''}`;
  if (run.failure === 'spawn') return `could not start (${String(run.code)})`;
  return line || `exit ${String(run.code)}`;
}
