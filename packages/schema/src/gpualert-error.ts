/**
 * Every error gpualert throws on purpose: a stable `code` an operator can look up in
 * docs/errors.md, and whether trying again can help (`retriable`). The bus retries a batch whose
 * handler threw a retriable one and dead-letters the rest; the CLI prints `error[CODE]: one line`
 * and leaves with the code's exit status.
 *
 * Codes are `GA-AREA-WHAT`: upper case, hyphens, never an environment variable's spelling.
 * Each is listed here with whether it is retriable by default; a code missing here does not compile,
 * and a test fails when one listed here is missing from docs/errors.md.
 */
export const ERROR_CODES = {
  'GA-CONFIG-INVALID': { retriable: false },
  'GA-INFRA-UNAVAILABLE': { retriable: true },
  'GA-CLI-USAGE': { retriable: false },
  'GA-CLI-FAILED': { retriable: false },
  'GA-SILENCE-INVALID': { retriable: false },
  'GA-NOTIFIER-CONFIG-INVALID': { retriable: false },
  'GA-RECEIVER-INVALID': { retriable: false },
  'GA-RECORDING-INVALID': { retriable: false },
  'GA-INCIDENT-UNKNOWN': { retriable: false },
  'GA-PROVIDER-FETCH-FAILED': { retriable: true },
  'GA-STORE-WRONG-TYPE': { retriable: false },
  'GA-ENVELOPE-INVALID': { retriable: false },
  'GA-TEMPLATE-INVALID': { retriable: false },
  'GA-PROMETHEUS-QUERY-FAILED': { retriable: true },
  'GA-BMC-FETCH-FAILED': { retriable: true },
  'GA-CSV-INVALID': { retriable: false },
  'GA-INTERNAL': { retriable: false },
} as const satisfies Readonly<Record<string, { readonly retriable: boolean }>>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface GpualertErrorOptions {
  readonly cause?: unknown;
  /** Overrides the code's default (a fetch that failed for good rather than for now). */
  readonly retriable?: boolean;
}

export class GpualertError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: GpualertErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? ERROR_CODES[code].retriable;
  }
}

/** Whether a value is a GpualertError: by class, or by shape across two copies of this module. */
export function isGpualertError(error: unknown): error is GpualertError {
  if (error instanceof GpualertError) return true;
  if (!(error instanceof Error)) return false;
  const code = 'code' in error ? error.code : undefined;
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) && 'retriable' in error && typeof error.retriable === 'boolean';
}

/** How deep a chain of `cause`s is followed: far enough for wrappers, bounded against cycles. */
export const MAX_ERROR_CAUSE_DEPTH = 8;

/** The first GpualertError in an error's chain of causes (the error itself first), if any. */
export function gpualertErrorIn(error: unknown): GpualertError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_ERROR_CAUSE_DEPTH && typeof current === 'object' && current !== null; depth += 1) {
    if (isGpualertError(current)) return current;
    current = 'cause' in current ? current.cause : undefined;
  }
  return undefined;
}

/** The code to report for any thrown value: its own or a cause's, else GA-INTERNAL. */
export function errorCodeOf(error: unknown): ErrorCode {
  return gpualertErrorIn(error)?.code ?? 'GA-INTERNAL';
}
