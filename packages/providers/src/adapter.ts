import type { ProviderEventData } from '@gpualert/schema';

/** What an adapter knows besides the payload. */
export interface AdapterContext {
  /** The host for on-instance sources (IMDS, GCP and Azure metadata), from `--host`. */
  readonly host?: string;
  /** When the payload was received, ISO-8601 UTC; used where the payload carries no usable time. */
  readonly receivedAt: string;
}

/** A payload that is not what the provider sends: where, and what was expected. */
export interface AdapterError {
  readonly path: string;
  readonly message: string;
}

export type AdapterResult =
  | {
      readonly ok: true;
      readonly events: ProviderEventData[];
      /** What a person should hear about though the payload was taken: an event that names no host. */
      readonly warnings?: readonly string[];
    }
  | { readonly ok: false; readonly error: AdapterError };

/**
 * One provider's payload → zero or more `provider.event`s. `hosts` holds what the provider
 * names (instance ids, VM names); the caller maps them to gpualert hosts through the inventory.
 */
export type ProviderAdapter = (payload: unknown, context: AdapterContext) => AdapterResult;

export function ok(events: ProviderEventData[]): AdapterResult {
  return { ok: true, events };
}

export function invalid(path: string, message: string): AdapterResult {
  return { ok: false, error: { path, message } };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops undefined optional fields so events compare and serialise cleanly. */
export function event(
  fields: Omit<ProviderEventData, 'window_start' | 'window_end'> & { window_start: string | undefined; window_end: string | undefined },
): ProviderEventData {
  const { window_start, window_end, ...rest } = fields;
  return { ...rest, ...(window_start ? { window_start } : {}), ...(window_end ? { window_end } : {}) };
}
