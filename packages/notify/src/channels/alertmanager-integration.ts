import type { GlobalConfig } from '../alertmanager-global.ts';

/** An Alertmanager integration as written in the file: one item of a `*_configs` list. */
export type RawIntegration = Readonly<Record<string, unknown>>;
/** Reports a problem at one of the integration's fields. */
export type FieldIssue = (field: string, message: string) => void;

/**
 * How a channel reads Alertmanager's `<type>_configs` (a channel without one takes `<name>_configs`
 * with its own settings). A field it cannot honour is refused naming it, never dropped.
 */
export interface AlertmanagerIntegration {
  /** The receiver's key, `<type>_configs`. */
  readonly key: `${string}_configs`;
  /** Alertmanager's default for send_resolved on this integration. */
  readonly sendResolved: boolean;
  /** Every field it takes, as Alertmanager names them (send_resolved, per_minute and per_second aside). */
  readonly fields: readonly string[];
  /** The fields Alertmanager templates here (a Go template each, compiled at load, rendered per message). */
  readonly templates: readonly string[];
  /** Our settings from its fields and `global:`; a problem is reported at the field. */
  readonly settings: (raw: RawIntegration, global: GlobalConfig, issue: FieldIssue) => Record<string, string>;
  /** Our setting → the Alertmanager field it came from, where the names differ (for an error's path). */
  readonly fieldOf?: Readonly<Partial<Record<string, string>>>;
  /** Configurations as Alertmanager's documentation writes them, together using every field: each loads (all-channels.test.ts). */
  readonly examples: readonly [RawIntegration, ...RawIntegration[]];
}

/** A field's text, or undefined when it is absent or not text. */
export function text(raw: RawIntegration, field: string): string | undefined {
  const value = raw[field];
  return typeof value === 'string' ? value : undefined;
}

/** `{ [field]: text }` when the field holds text, else nothing: for optional settings passed as written. */
export function textOf(raw: RawIntegration, field: string): Record<string, string> {
  const value = text(raw, field);
  return value ? { [field]: value } : {};
}

/** Fields Alertmanager templates but gpualert sends as written: a template there is refused, never sent as text. */
export function untemplated(raw: RawIntegration, fields: readonly string[], issue: FieldIssue): void {
  for (const field of fields) {
    if (text(raw, field)?.includes('{{')) issue(field, 'a template is not supported in this field by gpualert (it would be sent as written)');
  }
}
