import { ALERTMANAGER_DEFAULT_TEMPLATES } from './alertmanager-default-templates.ts';
import { templateData } from './go-template-data.ts';
import { CompiledTemplate, TemplateError, TemplateSet } from './go-template.ts';
import type { Notification } from './notifier-types.ts';

/**
 * The fields Alertmanager templates in the integrations gpualert maps, and what each becomes:
 * slack `title`/`text`, email `headers.Subject`/`html`/`text`, pagerduty `description` (the
 * event's summary), opsgenie `message`/`description`. The webhook has none (as in Alertmanager).
 */
export const TEMPLATE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  slack_configs: ['title', 'text', 'username', 'icon_emoji'],
  email_configs: ['subject', 'html', 'text'],
  pagerduty_configs: ['description'],
  opsgenie_configs: ['message', 'description'],
  victorops_configs: ['entity_display_name', 'state_message', 'monitoring_tool'],
};

/** Fields rendered as HTML (html/template's escaping of printed values). */
const HTML_FIELDS = new Set(['html']);

/** A field's template text and where it is in the routes file (for its file:line). */
export interface TemplateField {
  readonly source: string;
  readonly path: readonly (string | number)[];
}

/** Alertmanager's default templates, parsed once: every set starts from them. */
let defaults: TemplateSet | undefined;
export function defaultTemplateSet(): TemplateSet {
  if (!defaults) {
    defaults = new TemplateSet();
    defaults.add(ALERTMANAGER_DEFAULT_TEMPLATES, { file: 'alertmanager default.tmpl', line: 1 });
  }
  return defaults;
}

/** A template's error as one line: what, and where in the template when it spans lines. */
export function templateProblem(error: TemplateError): string {
  return `template: ${error.message}${error.line > 1 ? ` (line ${error.line} of the template)` : ''}`;
}

/** Compiles an integration's template fields against a set; one problem per bad field. */
export function compileFields(fields: Readonly<Record<string, TemplateField>>, set: TemplateSet): { compiled: Record<string, CompiledTemplate>; problems: { path: readonly (string | number)[]; message: string }[] } {
  const compiled = Object.create(null) as Record<string, CompiledTemplate>;
  const problems: { path: readonly (string | number)[]; message: string }[] = [];
  for (const [field, { source, path }] of Object.entries(fields)) {
    try {
      compiled[field] = CompiledTemplate.compile(source, set, { file: '', line: 1 }, HTML_FIELDS.has(field));
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      problems.push({ path, message: templateProblem(error) });
    }
  }
  return { compiled, problems };
}

/** What a message's templated fields rendered to; a field whose rendering failed (for any reason) is absent and named in `errors`: the channel sends its own text for it. */
export interface Rendered {
  readonly fields: Readonly<Record<string, string>>;
  readonly errors: readonly string[];
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.replace(/\s+/g, ' ').slice(0, 200)}` : 'unknown error';
}

/** Renders every templated field of an integration for one message (none: nothing to do). */
export function renderFields(compiled: Readonly<Record<string, CompiledTemplate>> | undefined, notification: Notification, escape?: (s: string) => string): Rendered | undefined {
  if (!compiled || Object.keys(compiled).length === 0) return undefined;
  const data = templateData(notification);
  const fields = Object.create(null) as Record<string, string>;
  const errors: string[] = [];
  for (const [field, template] of Object.entries(compiled)) {
    try {
      fields[field] = template.render(data, escape);
    } catch (error) {
      // Any error, not only a TemplateError: a template (or a bug rendering it) never turns a message into a retriable send failure.
      errors.push(`${field}: ${error instanceof TemplateError ? templateProblem(error) : `template: could not be rendered (${describeError(error)})`}`);
    }
  }
  return { fields, errors };
}
