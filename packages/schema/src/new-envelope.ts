import { randomUUID } from 'node:crypto';
import type { EnvelopeOf, EnvelopeType } from './envelope.ts';

export interface EnvelopeFields<T extends EnvelopeType> {
  readonly type: T;
  readonly host: string;
  readonly source: string;
  readonly data: EnvelopeOf<T>['data'];
  readonly ts?: string;
  readonly labels?: Record<string, string>;
  readonly id?: string;
}

/** Builds an envelope with a fresh id; `ts` defaults to now. */
export function newEnvelope<T extends EnvelopeType>(fields: EnvelopeFields<T>): EnvelopeOf<T> {
  // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- EnvelopeOf<T> is the union member T picks: TypeScript cannot see that `type` and `data` agree
  return {
    id: fields.id ?? randomUUID(),
    type: fields.type,
    ts: fields.ts ?? new Date().toISOString(),
    host: fields.host,
    labels: fields.labels ?? {},
    source: fields.source,
    data: fields.data,
  } as EnvelopeOf<T>;
}
