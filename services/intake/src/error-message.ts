/** What a caught value says: an Error's message, anything else as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A failed fetch's reason: undici puts the network error (ECONNREFUSED…) in `cause`. */
export function causeMessage(error: unknown): string {
  return error instanceof Error && error.cause instanceof Error ? error.cause.message : errorMessage(error);
}
