import { GpualertError, gpualertErrorIn, type ErrorCode } from '@gpualert/schema';

/** Exit codes: 0 done, 1 failed while running, 2 bad arguments or bad input, 75 something it needs is away (try again: sysexits' EX_TEMPFAIL). */
export const EXIT = { ok: 0, failed: 1, usage: 2, unavailable: 75 } as const;

/** An error meant for the person at the terminal: one line, and the exit code to leave with. */
export class CliError extends GpualertError {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.usage, options: { cause?: unknown } = {}) {
    super(exitCode === EXIT.usage ? 'GA-CLI-USAGE' : 'GA-CLI-FAILED', message, options);
    this.exitCode = exitCode;
  }
}

/** Codes that mean the input or the configuration is wrong: fixing them is the person's job (exit 2). */
const USAGE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'GA-CLI-USAGE',
  'GA-CONFIG-INVALID',
  'GA-SILENCE-INVALID',
  'GA-NOTIFIER-CONFIG-INVALID',
  'GA-RECEIVER-INVALID',
  'GA-RECORDING-INVALID',
  'GA-INCIDENT-UNKNOWN',
  'GA-ENVELOPE-INVALID',
  'GA-TEMPLATE-INVALID',
  'GA-CSV-INVALID',
]);

/** How the CLI reports a failure: the code, and the exit status it maps to. */
export interface CliFailure {
  readonly code: ErrorCode;
  readonly exitCode: number;
  /** `error[CODE]: message`, one line per line of the message. */
  readonly text: string;
}

/**
 * A thrown value as the CLI reports it. A CliError keeps its exit code; any other GpualertError
 * (its own or a cause's) maps by code: bad input 2, retriable 75, otherwise 1; anything else is
 * GA-INTERNAL, exit 1. Each line of the message is one `error[CODE]: …` line.
 */
export function cliFailure(error: unknown): CliFailure {
  // A CliError that wraps a GpualertError (passed as its cause) reports the cause's code, the more telling one.
  const known = (error instanceof CliError ? gpualertErrorIn(error.cause) : undefined) ?? gpualertErrorIn(error);
  const code: ErrorCode = known?.code ?? 'GA-INTERNAL';
  const exitCode =
    error instanceof CliError
      ? error.exitCode
      : known === undefined
        ? EXIT.failed
        : USAGE_CODES.has(code)
          ? EXIT.usage
          : known.retriable
            ? EXIT.unavailable
            : EXIT.failed;
  const message = error instanceof Error ? error.message : String(error);
  const text = message
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `error[${code}]: ${line}`)
    .join('\n');
  return { code, exitCode, text };
}

/** The `code` of a failed system call (ENOENT, EADDRINUSE…), when the error carries one. */
export function errnoCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** What a caught value says: an Error's message, anything else as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
