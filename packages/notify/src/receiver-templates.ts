import { ALERTMANAGER_DEFAULT_TEMPLATES } from './alertmanager-default-templates.ts';
import { ALL_CHANNELS } from './channels/all-channels.ts';
import { CompiledTemplate, TemplateError, TemplateSet } from './go-template.ts';
import { templateProblem } from './render-fields.ts';

/** Rendering a message's fields is the channels' part (render-fields.ts, below them); named here as before. */
export { renderFields, templateProblem, type Rendered } from './render-fields.ts';

/**
 * The fields Alertmanager templates in each integration gpualert maps (`<type>_configs` → fields),
 * as each channel's descriptor declares them (`alertmanager.templates`). The webhook has none (as in Alertmanager).
 */
export const TEMPLATE_FIELDS: Readonly<Record<string, readonly string[]>> = Object.assign(
  Object.create(null) as Record<string, readonly string[]>,
  Object.fromEntries(
    ALL_CHANNELS.flatMap((d) => (d.alertmanager && d.alertmanager.templates.length > 0 ? [[d.alertmanager.key, d.alertmanager.templates]] : [])),
  ),
);

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

/** Compiles an integration's template fields against a set; one problem per bad field. */
export function compileFields(
  fields: Readonly<Record<string, TemplateField>>,
  set: TemplateSet,
): { compiled: Record<string, CompiledTemplate>; problems: { path: readonly (string | number)[]; message: string }[] } {
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
