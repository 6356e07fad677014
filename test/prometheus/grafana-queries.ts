import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';

/**
 * The shipped Grafana dashboards (deploy/grafana/dashboards) and how Grafana asks Prometheus for
 * their panels: the variables' `label_values` through the series API, each panel's PromQL as an
 * instant query. Shared by the tests that run a real Prometheus on the shipped configuration.
 */
const DASHBOARDS = new URL('../../deploy/grafana/dashboards/', import.meta.url);

export interface Target {
  refId: string;
  expr: string;
}
export interface Panel {
  type: string;
  title: string;
  targets?: Target[];
  panels?: Panel[];
}
export interface Variable {
  type: string;
  name: string;
  query?: string | { query: string };
  sort?: number;
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Variable[] };
}
export interface Series {
  metric: Record<string, string>;
  value: [number, string];
}
export interface ActiveTarget {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: string;
  lastError: string;
}

export const dashboards = readdirSync(DASHBOARDS)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ file, board: JSON.parse(readFileSync(new URL(file, DASHBOARDS), 'utf8')) as Dashboard }));

/** Every panel, rows' panels included. */
export function panelsOf(board: Dashboard): Panel[] {
  return board.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** `label_values(selector, label)`, as Grafana's Prometheus data source resolves it: the label's values on the selector's series. */
export async function labelValues(base: string, query: string): Promise<string[]> {
  const m = /^label_values\((.+),\s*(\w+)\)$/.exec(query);
  if (!m) throw new Error(`not a label_values query: ${query}`);
  const response = await fetch(`${base}/api/v1/series?${new URLSearchParams({ 'match[]': m[1]! }).toString()}`);
  const body = (await response.json()) as { status: string; data: Record<string, string>[] };
  expect(body.status, query).toBe('success');
  return [...new Set(body.data.map((s) => s[m[2]!]).filter((v): v is string => v !== undefined))];
}

export async function activeTargets(base: string): Promise<ActiveTarget[]> {
  const body = (await (await fetch(`${base}/api/v1/targets?state=active`)).json()) as { data: { activeTargets: ActiveTarget[] } };
  return body.data.activeTargets;
}

export async function instant(base: string, expr: string): Promise<Series[]> {
  const response = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: expr }).toString()}`);
  const body = (await response.json()) as { status: string; error?: string; data: { result: Series[] } };
  expect(body.status, `${expr}: ${body.error ?? ''}`).toBe('success');
  return body.data.result;
}

/** Each variable's values in order, the first one chosen, as Grafana does on opening (sort 1: alphabetical, 3: numerical). */
export async function resolveVariables(base: string, board: Dashboard, fixed: Record<string, string> = {}): Promise<Map<string, string>> {
  const chosen = new Map<string, string>();
  for (const variable of board.templating.list) {
    if (variable.type !== 'query') continue;
    const raw = variableQuery(variable);
    const values = await labelValues(base, substitute(raw, chosen));
    expect(values.length, `${board.uid}: $${variable.name} (${raw}) has values`).toBeGreaterThan(0);
    values.sort(variable.sort === 3 ? (a, b) => Number(a) - Number(b) : undefined);
    const value = fixed[variable.name] ?? values[0]!;
    expect(values).toContain(value);
    chosen.set(variable.name, value);
  }
  return chosen;
}

export function variableQuery(variable: Variable): string {
  return typeof variable.query === 'string' ? variable.query : variable.query!.query;
}

export function substitute(expr: string, values: ReadonlyMap<string, string>): string {
  return expr.replace(/\$(\w+)/g, (all, name: string) => values.get(name) ?? all);
}
