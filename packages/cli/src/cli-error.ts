/** An error meant for the person at the terminal: one line, and the exit code to leave with. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Exit codes: 0 done, 1 failed while running, 2 bad arguments or bad input. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
