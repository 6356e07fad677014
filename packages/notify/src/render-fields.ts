import { templateData } from './go-template-data.ts';
import { TemplateError, type CompiledTemplate } from './go-template.ts';
import type { Notification } from './notifier-types.ts';

/** A template's error as one line: what, and where in the template when it spans lines. */
export function templateProblem(error: TemplateError): string {
  return `template: ${error.message}${error.line > 1 ? ` (line ${error.line} of the template)` : ''}`;
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
export function renderFields(
  compiled: Readonly<Record<string, CompiledTemplate>> | undefined,
  notification: Notification,
  escape?: (s: string) => string,
): Rendered | undefined {
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
