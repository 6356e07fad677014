import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { bundledPath, loadYamlFile, nearestOf, withNearest, type RuleFileError } from '@gpualert/rules';
import { must } from '@gpualert/schema';
import { RuleSpec, RulesFile, Template } from './rule-set.ts';

/** Rules with each template's overrides applied, ready for the engine. */
export interface RuleSet {
  readonly templates: readonly BoundTemplate[];
}

export interface BoundTemplate {
  readonly template: Template;
  /** The rules as this template sees them (overrides applied, disabled ones left out). */
  readonly rules: readonly RuleSpec[];
}

export const DEFAULT_RULES_DIR = `${bundledPath('rules')}/`;

/**
 * Loads `defaults.yaml` and `templates/*.yaml` from a rules directory; every problem is reported
 * with its file, line and field, and nothing is returned unless all of it is valid.
 */
export function loadRuleSet(dir: string = DEFAULT_RULES_DIR): { ok: true; value: RuleSet } | { ok: false; errors: RuleFileError[] } {
  const errors: RuleFileError[] = [];
  const defaultsFile = join(dir, 'defaults.yaml');
  const defaults = loadYamlFile(defaultsFile, RulesFile);
  if (!defaults.ok) errors.push(...defaults.errors);
  const templateDir = join(dir, 'templates');
  let files: string[] = [];
  try {
    files = readdirSync(templateDir)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort();
  } catch {
    errors.push({ file: templateDir, line: 0, field: '', message: 'no templates directory' });
  }
  const templates: { file: string; template: Template; lineOf: (path: readonly PropertyKey[]) => number }[] = [];
  for (const file of files) {
    const loaded = loadYamlFile(join(templateDir, file), Template);
    if (loaded.ok) templates.push({ file: join(templateDir, file), template: loaded.value, lineOf: loaded.lineOf });
    else errors.push(...loaded.errors);
  }
  if (!templates.some((t) => Object.keys(t.template.match).length === 0)) {
    errors.push({ file: templateDir, line: 0, field: '', message: 'one template must match every host (match: {}), for hosts with no inventory yet' });
  }
  if (!defaults.ok || errors.length > 0) return { ok: false, errors };
  const bound: BoundTemplate[] = [];
  for (const { file, template, lineOf } of templates) {
    const rules: RuleSpec[] = [];
    const ids = [...new Set(defaults.value.rules.map((r) => r.id))];
    const unknown = (id: string, path: readonly PropertyKey[]) => {
      if (ids.includes(id)) return;
      const nearest = nearestOf(id, ids);
      errors.push({
        file,
        line: lineOf(path),
        field: path.join('.'),
        message: `no rule "${id}" in defaults.yaml${nearest ? `; did you mean "${nearest}"?` : ''}`,
      });
    };
    for (const id of Object.keys(template.overrides)) unknown(id, ['overrides', id]);
    template.disable.forEach((id, i) => unknown(id, ['disable', i]));
    for (const rule of defaults.value.rules) {
      if (!rule.enabled || template.disable.includes(rule.id)) continue;
      const override = template.overrides[rule.id];
      if (!override) {
        rules.push(rule);
        continue;
      }
      const merged = RuleSpec.safeParse({ ...toInput(rule), ...override });
      if (merged.success) rules.push(merged.data);
      else {
        for (const issue of merged.error.issues) {
          const path = ['overrides', rule.id, ...issue.path];
          const got = issue.path.reduce<unknown>(
            (v, k) => (typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[k] : undefined),
            override,
          );
          errors.push({ file, line: lineOf(path), field: path.map(String).join('.'), message: withNearest(issue as Parameters<typeof withNearest>[0], got) });
        }
      }
    }
    bound.push({ template, rules });
  }
  if (errors.length > 0) return { ok: false, errors };
  bound.sort((a, b) => b.template.priority - a.template.priority);
  return { ok: true, value: { templates: bound } };
}

/** Back to the YAML form (durations as text) so an override re-validates through the schema. */
function toInput(rule: RuleSpec): Record<string, unknown> {
  const out: Record<string, unknown> = { ...rule };
  for (const [key, value] of Object.entries(rule)) {
    if (['for', 'quiet', 'window', 'explains_for', 'grace', 'stalled_after', 'missing_for', 'settle', 'max_age'].includes(key) && typeof value === 'number')
      out[key] = `${value}ms`;
  }
  out.escalate = rule.escalate.map((e) => ({ ...e, after: `${e.after}ms` }));
  if (rule.kind === 'event' && rule.repeat) out.repeat = { ...rule.repeat, within: `${rule.repeat.within}ms` };
  return out;
}

/** The template that judges a host: the highest-priority one whose every matcher matches. */
export function bindTemplate(
  ruleSet: RuleSet,
  fingerprint: { gpu_model?: string | undefined; provider?: string | undefined },
  labels: Readonly<Record<string, string>>,
): BoundTemplate {
  const values: Record<string, string | undefined> = {
    gpu_model: fingerprint.gpu_model,
    provider: fingerprint.provider,
    cluster: labels.cluster,
    role: labels.role,
  };
  for (const bound of ruleSet.templates) {
    const ok = Object.entries(bound.template.match).every(([key, pattern]) => {
      const value = values[key];
      return value !== undefined && pattern !== undefined && new RegExp(pattern, 'i').test(value);
    });
    if (ok) return bound;
  }
  return fallbackTemplate(ruleSet);
}

/** The lowest-priority template, for a host no other matches (loading refuses a rule set with no templates). */
export function fallbackTemplate(ruleSet: RuleSet): BoundTemplate {
  return must(ruleSet.templates.at(-1), 'a loaded rule set has templates');
}
