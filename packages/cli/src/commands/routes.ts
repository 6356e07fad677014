import { formatMatcher, parseMatchers, routesFor, walkRoutes, type ResolvedRoute, type RoutesFile, type RouteSpec } from '@gpualert/notify';
import { CliError, EXIT } from '../cli-error.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { ROUTES_SETTINGS } from '../settings/notifier-settings.ts';
import { loadRoutesOrExit } from './load-files.ts';
import { stringOption } from '../option-values.ts';

type Options = Record<string, unknown>;

function duration(ms: number): string {
  const units: [number, string][] = [
    [604_800_000, 'w'],
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1_000, 's'],
    [1, 'ms'],
  ];
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [size, unit] of units) {
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return out;
}

function grouping(route: ResolvedRoute): string {
  return route.groupByAll ? '[...]' : `[${route.groupBy.join(', ')}]`;
}

/** `LABEL=VALUE` arguments (or `{a="1", b="2"}`, as amtool takes them) into a label set; anything but `=` is refused. */
export function labelsOf(args: readonly string[]): Record<string, string> {
  const labels = Object.create(null) as Record<string, string>;
  for (const arg of args) {
    const parsed = parseMatchers(arg);
    if (typeof parsed === 'string') throw new CliError(`gpualert routes test: ${parsed}`);
    for (const m of parsed) {
      if (m.op !== '=') throw new CliError(`gpualert routes test: ${formatMatcher(m)}: a label is LABEL=VALUE`);
      labels[m.label] = m.value;
    }
  }
  return labels;
}

/**
 * `gpualert routes test LABEL=VALUE…`, as `amtool config routes test`: the first line is the
 * receivers reached, comma-separated (amtool's output, so scripts keep working); then one line per
 * match with its group labels and timings. `--verify-receivers a,b` exits 1 on a different answer.
 */
export async function routesTest(args: string[], options: Options): Promise<number> {
  const config = loadRoutesOrExit(loadSettings(ROUTES_SETTINGS, options).routes, 'routes test');
  const labels = labelsOf(args);
  const matched = routesFor(config.route, labels);
  const receivers = matched.map((r) => r.receiver);
  process.stdout.write(`${receivers.join(',')}\n`);
  for (const r of matched) {
    const group = r.groupByAll ? Object.keys(labels).sort() : r.groupBy;
    const values = group.map((l) => `${l}=${JSON.stringify(Object.hasOwn(labels, l) ? labels[l] : '')}`).join(', ');
    process.stdout.write(
      `  ${r.receiver}  route ${r.id}  group_by ${grouping(r)} {${values}}  group_wait ${duration(r.groupWait)}  group_interval ${duration(r.groupInterval)}  repeat_interval ${duration(r.repeatInterval)}${r.page ? '  page' : ''}${r.mute.length ? `  mute ${r.mute.join(',')}` : ''}${r.active.length ? `  active ${r.active.join(',')}` : ''}\n`,
    );
  }
  const expected = stringOption(options, 'verifyReceivers');
  if (
    expected !== undefined &&
    expected
      .split(',')
      .map((s) => s.trim())
      .join(',') !== receivers.join(',')
  ) {
    process.stderr.write(`WARNING: Expected receivers did not match resolved receivers.\n`);
    return EXIT.failed;
  }
  return EXIT.ok;
}

/** The routing tree, one route a line, as `amtool config routes show`. */
export function renderTree(config: RoutesFile): string {
  const lines = ['Routing tree:'];
  const last: boolean[] = [];
  const parentsOf = new Map<RouteSpec, RouteSpec>();
  walkRoutes(config.route, (route) => route.routes.forEach((c) => parentsOf.set(c, route)));
  walkRoutes(config.route, (route, r, depth) => {
    const parent = parentsOf.get(route);
    const isLast = parent ? parent.routes[parent.routes.length - 1] === route : true;
    last[depth] = isLast;
    const prefix =
      depth === 0
        ? '└── '
        : `    ${last
            .slice(1, depth)
            .map((l) => (l ? '    ' : '│   '))
            .join('')}${isLast ? '└── ' : '├── '}`;
    const name = depth === 0 ? 'default-route' : `{${route.matchers.map(formatMatcher).join(',')}}`;
    const details = [
      `receiver: ${r.receiver}`,
      route.continue ? 'continue: true' : '',
      route.group_by !== undefined || route.group_by_all ? `group_by: ${grouping(r)}` : '',
      route.group_wait !== undefined ? `group_wait: ${duration(r.groupWait)}` : '',
      route.group_interval !== undefined ? `group_interval: ${duration(r.groupInterval)}` : '',
      route.repeat_interval !== undefined ? `repeat_interval: ${duration(r.repeatInterval)}` : '',
      r.page ? 'page: true' : '',
      r.mute.length ? `mute: ${r.mute.join(',')}` : '',
      r.active.length ? `active: ${r.active.join(',')}` : '',
    ].filter(Boolean);
    lines.push(`${prefix}${name}  ${details.join('  ')}`);
  });
  return `${lines.join('\n')}\n`;
}

export async function routesShow(options: Options): Promise<number> {
  const config = loadRoutesOrExit(loadSettings(ROUTES_SETTINGS, options).routes, 'routes show');
  process.stdout.write(renderTree(config));
  return EXIT.ok;
}

export { CliError };
