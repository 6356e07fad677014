import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRuleError, parseYamlText } from '@gpualert/rules';
import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { parse as parseYaml, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadRoutes } from './load-routes.ts';
import { emptyNotifierState, NotifierCore, type Decision } from './notifier-core.ts';
import { RoutesFile } from './route-config.ts';
import { routesFor } from './routing.ts';
import { inInterval, TimeIntervalSchema } from './time-interval.ts';

/*
 * Alertmanager's own tables, ported (source: github.com/prometheus/alertmanager at v0.25.0):
 *   dispatch/route_test.go TestRouteMatch (the tree and every case),
 *   timeinterval/timeinterval_test.go yamlUnmarshalTestCases (verbatim YAML, messages) and timeIntervalTestCases,
 *   config/config_test.go's validation cases (TestContinueErrorInRouteRoot, TestGroupByHasNoDuplicatedLabels, TestGroupByInvalidLabel,
 *   TestWildcardGroupByWithOtherGroupByLabels, TestRootRouteHasNoMatcher, TestReceiverExists, TestReceiverHasName,
 *   TestMuteTimeExists, TestActiveTimeExists, TestTimeIntervalHasName… TestGroupIntervalIsGreaterThanZero,
 *   TestRepeatIntervalIsGreaterThanZero, TestHideConfigSecrets' shape), with Alertmanager's wording.
 */

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gpualert-am-')), 'alertmanager.yml');
  writeFileSync(path, text);
  return path;
}
const load = (text: string) => {
  const r = loadRoutes(file(text));
  if (!r.ok) throw new Error(r.errors.map(formatRuleError).join('\n'));
  return r.value;
};
const errorsOf = (text: string) => {
  const r = loadRoutes(file(text));
  return r.ok ? [] : r.errors.map(formatRuleError);
};

const ROUTE_TEST_TREE = `
receiver: 'notify-def'

routes:
- match:
    owner: 'team-A'

  receiver: 'notify-A'

  routes:
  - match:
      env: 'testing'

    receiver: 'notify-testing'
    group_by: [...]

  - match:
      env: "production"

    receiver: 'notify-productionA'
    group_wait: 1m

    continue: true

  - match_re:
      env: "produ.*"
      job: ".*"

    receiver: 'notify-productionB'
    group_wait: 30s
    group_interval: 5m
    repeat_interval: 1h
    group_by: ['job']

- match_re:
    owner: 'team-(B|C)'

  group_by: ['foo', 'bar']
  group_wait: 2m
  receiver: 'notify-BC'

- match:
    group_by: 'role'
  group_by: ['role']

  routes:
  - match:
      env: 'testing'
    receiver: 'notify-testing'
    routes:
    - match:
        wait: 'long'
      group_wait: 2m
`;
const receiversFor = (names: string[]) =>
  `receivers:\n${names.map((n) => `- name: '${n}'\n  webhook_configs: [{ url: 'http://127.0.0.1:9/${n}' }]`).join('\n')}\n`;
const ROUTE_TEST_CONFIG = `${receiversFor(['notify-def', 'notify-A', 'notify-testing', 'notify-productionA', 'notify-productionB', 'notify-BC'])}route:\n${ROUTE_TEST_TREE.split(
  '\n',
)
  .map((l) => `  ${l}`)
  .join('\n')}`;

const S = 1_000;
const M = 60 * S;
const def = { groupBy: [] as string[], groupByAll: false, groupWait: 30 * S, groupInterval: 5 * M, repeatInterval: 4 * 60 * M };

/** Go's RFC822Z layout, "02 Jan 06 15:04 -0700", as the interval tables write times. */
function goTime(text: string): number {
  const m = /^(\d{1,2}) (\w{3}) (\d\d) (\d\d):(\d\d) ([+-])(\d\d)(\d\d)$/.exec(text)!;
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'].indexOf(m[2]!);
  const offset = (m[6] === '-' ? -1 : 1) * (Number(m[7]) * 60 + Number(m[8])) * M;
  return Date.UTC(2000 + Number(m[3]), month, Number(m[1]), Number(m[4]), Number(m[5])) - offset;
}

const YAML_UNMARSHAL_CASES: { in: string; err?: string; contains: string[]; excludes: string[] }[] = [
  {
    in: "\n---\n- weekdays: ['monday:friday']\n  times:\n    - start_time: '09:00'\n      end_time: '17:00'\n",
    contains: ['08 Jul 20 09:00 +0000', '08 Jul 20 16:59 +0000'],
    excludes: ['08 Jul 20 05:00 +0000', '08 Jul 20 08:59 +0000'],
  },
  {
    in: "\n---\n  # Last week, excluding Saturday, of the first quarter of the year during business hours from 2020 to 2025 and 2030-2035\n- weekdays: ['monday:friday', 'sunday']\n  months: ['january:march']\n  days_of_month: ['-7:-1']\n  years: ['2020:2025', '2030:2035']\n  times:\n    - start_time: '09:00'\n      end_time: '17:00'\n",
    contains: [
      '27 Jan 21 09:00 +0000',
      '28 Jan 21 16:59 +0000',
      '29 Jan 21 13:00 +0000',
      '31 Mar 25 13:00 +0000',
      '31 Mar 25 13:00 +0000',
      '31 Jan 35 13:00 +0000',
    ],
    excludes: ['30 Jan 21 13:00 +0000', '01 Apr 21 13:00 +0000', '30 Jan 26 13:00 +0000', '31 Jan 35 17:01 +0000'],
  },
  {
    in: "\n---\n- weekdays: ['monday:friday']\n  times:\n    - start_time: '09:00'\n      end_time: '17:00'",
    contains: ['01 Apr 21 13:00 +0000'],
    excludes: [],
  },
  {
    in: "\n---\n- times:\n    - start_time: '01:99'\n      end_time: '23:59'",
    err: "couldn't parse timestamp 01:99, invalid format",
    contains: [],
    excludes: [],
  },
  {
    in: "\n---\n- times:\n    - start_time: '00:00'\n      end_time: '99:99'",
    err: "couldn't parse timestamp 99:99, invalid format",
    contains: [],
    excludes: [],
  },
  { in: "\n---\n- weekdays: ['friday:monday']", err: 'start day cannot be before end day', contains: [], excludes: [] },
  { in: "\n---\n- weekdays: ['blurgsday:flurgsday']\n", err: 'blurgsday is not a valid weekday', contains: [], excludes: [] },
  { in: "\n---\n- weekdays: ['1:3']\n", err: '1 is not a valid weekday', contains: [], excludes: [] },
  { in: "\n---\n- weekdays: ['-2:-1']\n", err: '-2 is not a valid weekday', contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['0']\n", err: '0 is not a valid day of the month: out of range', contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['-50:-20']\n", err: '-50 is not a valid day of the month: out of range', contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['1:50']\n", err: '50 is not a valid day of the month: out of range', contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['1:-1']\n", contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['-15:5']\n", err: 'end day must be negative if start day is negative', contains: [], excludes: [] },
  { in: "\n---\n- days_of_month: ['10:-25']\n", err: 'end day -25 is always before start day 10', contains: [], excludes: [] },
  { in: "\n---\n- months: ['January:december']\n", contains: [], excludes: [] },
  { in: "\n---\n- years: ['2020:2022']\n  location: 'Australia/Sydney'\n", contains: [], excludes: [] },
  { in: "\n---\n- months: ['martius:june']\n", err: 'martius is not a valid month', contains: [], excludes: [] },
  { in: "\n---\n- months: ['march:junius']\n", err: 'junius is not a valid month', contains: [], excludes: [] },
  { in: "\n---\n- months: ['december:january']\n", err: 'end month january is before start month december', contains: [], excludes: [] },
  { in: "\n---\n- years: ['2022:2020']\n", err: 'end year 2020 is before start year 2022', contains: [], excludes: [] },
];

const intervalOf = (ranges: unknown) => {
  const parsed = TimeIntervalSchema.safeParse({ name: 'x', time_intervals: ranges });
  return parsed.success ? parsed.data : parsed.error.issues.map((i) => i.message).join('; ');
};

/** The same table with one receiver a gpualert channel (`channel: record`): an Alertmanager tree still, with Alertmanager's defaults. */
const MIXED_ROUTE_TEST_CONFIG = ROUTE_TEST_CONFIG.replace(/- name: 'notify-BC'\n[^\n]*\n/, "- name: 'notify-BC'\n  channel: record\n");

describe.each([
  ['as written', ROUTE_TEST_CONFIG],
  ['with a gpualert receiver among them', MIXED_ROUTE_TEST_CONFIG],
])("Alertmanager's routing table (dispatch/route_test.go TestRouteMatch), %s", (_how, text) => {
  const config = load(text);
  it('is the file it says', () => {
    expect(text.includes('channel: record')).toBe(text === MIXED_ROUTE_TEST_CONFIG);
  });
  it.each([
    [{ owner: 'team-A' }, [{ ...def, receiver: 'notify-A' }]],
    [{ owner: 'team-A', env: 'unset' }, [{ ...def, receiver: 'notify-A' }]],
    [{ owner: 'team-C' }, [{ ...def, receiver: 'notify-BC', groupBy: ['foo', 'bar'], groupWait: 2 * M }]],
    [{ owner: 'team-A', env: 'testing' }, [{ ...def, receiver: 'notify-testing', groupByAll: true }]],
    [
      { owner: 'team-A', env: 'production' },
      [
        { ...def, receiver: 'notify-productionA', groupWait: 1 * M },
        { ...def, receiver: 'notify-productionB', groupBy: ['job'], groupWait: 30 * S, groupInterval: 5 * M, repeatInterval: 60 * M },
      ],
    ],
    [{ group_by: 'role' }, [{ ...def, receiver: 'notify-def', groupBy: ['role'] }]],
    [{ env: 'testing', group_by: 'role' }, [{ ...def, receiver: 'notify-testing', groupBy: ['role'] }]],
    [{ env: 'testing', group_by: 'role', wait: 'long' }, [{ ...def, receiver: 'notify-testing', groupBy: ['role'], groupWait: 2 * M }]],
  ] as const)('%j', (labels, want) => {
    const got = routesFor(config.route, labels).map(({ receiver, groupBy, groupByAll, groupWait, groupInterval, repeatInterval }) => ({
      receiver,
      groupBy,
      groupByAll,
      groupWait,
      groupInterval,
      repeatInterval,
    }));
    expect(got).toEqual(want);
  });
});

describe("Alertmanager's time intervals (timeinterval/timeinterval_test.go)", () => {
  it.each(YAML_UNMARSHAL_CASES)('yamlUnmarshal %#', (c) => {
    const got = intervalOf(parseYaml(c.in));
    if (c.err !== undefined) {
      expect(got).toBe(c.err);
      return;
    }
    expect(typeof got).toBe('object');
    if (typeof got === 'string') return;
    for (const t of c.contains) expect(inInterval(got, goTime(t)), t).toBe(true);
    for (const t of c.excludes) expect(inInterval(got, goTime(t)), t).toBe(false);
  });

  it.each([
    [{}, ['02 Jan 06 15:04 +0000', '03 Jan 07 10:04 +0000', '04 Jan 06 09:04 +0000'], []],
    [
      { times: [{ start_time: '09:00', end_time: '17:00' }], weekdays: ['monday:friday'] },
      ['04 May 20 15:04 +0000', '05 May 20 10:04 +0000', '09 Jun 20 09:04 +0000'],
      ['03 May 20 15:04 +0000', '04 May 20 08:59 +0000', '05 May 20 05:00 +0000'],
    ],
    [
      { days_of_month: ['4:6'], months: ['4'], years: ['2020'] },
      ['04 Apr 20 15:04 +0000', '05 Apr 20 00:00 +0000', '06 Apr 20 23:05 +0000'],
      ['03 May 18 15:04 +0000', '03 Apr 20 23:59 +0000', '04 Jun 20 23:59 +0000', '06 Apr 19 23:59 +0000', '07 Apr 20 00:00 +0000'],
    ],
    [
      { days_of_month: ['-3:-1'] },
      ['31 Jan 20 15:04 +0000', '30 Jan 20 15:04 +0000', '29 Jan 20 15:04 +0000', '30 Jun 20 00:00 +0000', '29 Feb 20 23:05 +0000'],
      [
        '03 May 18 15:04 +0000',
        '27 Jan 20 15:04 +0000',
        '03 Apr 20 23:59 +0000',
        '04 Jun 20 23:59 +0000',
        '06 Apr 19 23:59 +0000',
        '07 Apr 20 00:00 +0000',
        '01 Mar 20 00:00 +0000',
      ],
    ],
    // Built directly, as the Go test does: -31:31 does not pass the YAML validation.
    [
      { raw: { months: [{ begin: 6, end: 6 }], days_of_month: [{ begin: -31, end: 31 }] } },
      ['30 Jun 20 00:00 +0000', '01 Jun 20 00:00 +0000'],
      ['31 May 20 00:00 +0000', '1 Jul 20 00:00 +0000'],
    ],
    [
      { times: [{ start_time: '09:00', end_time: '17:00' }], weekdays: ['monday:friday'], location: 'Australia/Sydney' },
      ['06 Apr 21 13:00 +1000'],
      ['06 Apr 21 13:00 +0000'],
    ],
    [
      { times: [{ start_time: '09:00', end_time: '17:00' }], weekdays: ['monday:friday'], months: ['11'], location: 'Australia/Sydney' },
      ['01 Nov 21 09:00 +1100', '31 Oct 21 22:00 +0000'],
      ['31 Oct 21 21:00 +0000'],
    ],
  ])('ContainsTime %#', (spec, inside, outside) => {
    const interval = 'raw' in spec ? { name: 'x', time_intervals: [spec.raw] } : intervalOf([spec]);
    if (typeof interval === 'string') throw new Error(interval);
    for (const t of inside) expect(inInterval(interval, goTime(t)), t).toBe(true);
    for (const t of outside) expect(inInterval(interval, goTime(t)), t).toBe(false);
  });
});

const ONE_RECEIVER = "receivers:\n- name: team\n  webhook_configs: [{ url: 'http://127.0.0.1:9/hook' }]\n";

describe("Alertmanager's config checks (config/config_test.go), each at its file:line", () => {
  it.each([
    ['continue on the root', `${ONE_RECEIVER}route:\n  receiver: team\n  continue: true\n`, ':6: route.continue: cannot have continue in root route'],
    [
      'duplicated group_by label',
      `${ONE_RECEIVER}route:\n  receiver: team\n  group_by: ['alertname', 'cluster', 'service', 'cluster']\n`,
      ':6: route.group_by: duplicated label "cluster" in group_by',
    ],
    [
      'an invalid group_by label (TestGroupByInvalidLabel)',
      `${ONE_RECEIVER}route:\n  receiver: team\n  group_by: ['-invalid-']\n`,
      ':6: route.group_by: invalid label name "-invalid-" in group_by list',
    ],
    [
      '... with other labels',
      `${ONE_RECEIVER}route:\n  receiver: team\n  group_by: ['alertname', 'cluster', '...']\n`,
      ':6: route.group_by: cannot have wildcard group_by (`...`) and other labels at the same time',
    ],
    [
      'matchers on the root',
      `${ONE_RECEIVER}route:\n  receiver: team\n  matchers: ['severity="critical"']\n`,
      ':6: route.matchers: root route must not have any matchers',
    ],
    [
      'an undefined receiver',
      `${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  - receiver: nobody\n`,
      ':7: route.routes.0.receiver: undefined receiver "nobody" used in route',
    ],
    ['a receiver without a name', "receivers:\n- webhook_configs: [{ url: 'http://127.0.0.1:9/hook' }]\nroute:\n  receiver: team\n", ':2: receivers.0.name'],
    [
      'a duplicate receiver',
      `${ONE_RECEIVER}- name: team\n  webhook_configs: [{ url: 'http://127.0.0.1:9/other' }]\nroute:\n  receiver: team\n`,
      ':4: receivers.1.name: notification config name "team" is not unique',
    ],
    [
      'an undefined mute interval',
      `${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  - receiver: team\n    mute_time_intervals: [business_hours]\n`,
      ':8: route.routes.0.mute_time_intervals: undefined time interval "business_hours" used in route',
    ],
    [
      'an undefined active interval',
      `${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  - receiver: team\n    active_time_intervals: [business_hours]\n`,
      'undefined time interval "business_hours" used in route',
    ],
    [
      'a duplicate time interval',
      `${ONE_RECEIVER}route: { receiver: team }\ntime_intervals:\n- name: x\n  time_intervals: [{ weekdays: [monday] }]\n- name: x\n  time_intervals: [{ weekdays: [tuesday] }]\n`,
      ':8: time_intervals.1.name: time interval "x" is not unique',
    ],
    ['a zero group_interval', `${ONE_RECEIVER}route:\n  receiver: team\n  group_interval: 0s\n`, ':6: route.group_interval: group_interval cannot be zero'],
    ['a zero repeat_interval', `${ONE_RECEIVER}route:\n  receiver: team\n  repeat_interval: 0s\n`, ':6: route.repeat_interval: repeat_interval cannot be zero'],
    [
      'an unknown key in a route (`labels`)',
      `${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  - receiver: team\n    labels: { team: a }\n`,
      ':8: route.routes.0.labels: unknown key "labels"',
    ],
    [
      'a nested time_intervals key misplaced',
      `${ONE_RECEIVER}route: { receiver: team }\ntime_intervals:\n- name: x\n  time_intervals:\n  - weekday: [monday]\n`,
      ':8: time_intervals.0.time_intervals.0.weekday: unknown key "weekday"',
    ],
    [
      'a key of later Alertmanager releases (tracing)',
      `${ONE_RECEIVER}route: { receiver: team }\ntracing:\n  endpoint: localhost:4317\n`,
      ':5: tracing: tracing is a key of Alertmanager releases after 0.25 (exporting traces of notifications); gpualert exports no traces, so it is refused',
    ],
    [
      'global: written with no value, and routes: with only a comment (Go reads both as absent)',
      `global:\n${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  # none yet\n`,
      'LOADS',
    ],
    [
      'a global http_config key Alertmanager 0.25 does not know',
      `global:\n  http_config:\n    proxy_from_environment: true\n${ONE_RECEIVER}route: { receiver: team }\n`,
      ':3: global.http_config.proxy_from_environment: field proxy_from_environment not found in http_config',
    ],
    [
      'a global secret in a file',
      `global:\n  smtp_auth_password_file: /run/secrets/smtp\n${ONE_RECEIVER}route: { receiver: team }\n`,
      ':2: global.smtp_auth_password_file: smtp_auth_password_file: a secret in a file is not read by gpualert',
    ],
    ['a fractional duration', `${ONE_RECEIVER}route:\n  receiver: team\n  group_wait: 1.5h\n`, ':6: route.group_wait: not a valid duration string: "1.5h"'],
    [
      'a template function outside the subset',
      "receivers:\n- name: team\n  slack_configs:\n  - api_url: 'https://hooks.slack.com/services/T/B/x'\n    text: '{{ .CommonAnnotations | toJson }}'\nroute: { receiver: team }\n",
      ':5: receivers.0.slack_configs.0.text: template: function "toJson" is not supported',
    ],
    [
      'a template field Alertmanager has not',
      "receivers:\n- name: team\n  slack_configs:\n  - api_url: 'https://hooks.slack.com/services/T/B/x'\n    title: |\n      {{ .Status }}\n      {{ .Alerts.Firing.Labels }}\nroute: { receiver: team }\n",
      ":5: receivers.0.slack_configs.0.title: template: can't evaluate field Labels in type Alerts (line 2 of the template)",
    ],
    [
      'a template not defined',
      'receivers:\n- name: team\n  pagerduty_configs:\n  - routing_key: abc\n    description: \'{{ template "my.description" . }}\'\nroute: { receiver: team }\n',
      ':5: receivers.0.pagerduty_configs.0.description: template: no such template "my.description"',
    ],
    [
      'an email header other than Subject',
      "receivers:\n- name: team\n  email_configs:\n  - { to: a@example.com, from: b@example.com, smarthost: 'smtp.example.com:587', headers: { Subject: '{{ .Status }}', X-Team: db } }\nroute: { receiver: team }\n",
      'email header "X-Team" is not supported by gpualert',
    ],
    [
      'a Slack field gpualert does not send',
      "receivers:\n- name: team\n  slack_configs:\n  - api_url: 'https://hooks.slack.com/services/T/B/x'\n    pretext: '{{ .CommonAnnotations.summary }}'\nroute: { receiver: team }\n",
      ':5: receivers.0.slack_configs.0.pretext: slack: "pretext" is not supported by gpualert',
    ],
    ['WeChat', 'receivers:\n- name: team\n  wechat_configs: [{ corp_id: x }]\nroute: { receiver: team }\n', ':3: receivers.0.wechat_configs: WeChat Work'],
  ])('%s', (_name, text, want) => {
    const found = errorsOf(text).join('\n');
    if (want === 'LOADS') expect(found).toBe('');
    else expect(found).toContain(want);
  });

  it('takes Prometheus durations (1h30m, 1w) and every matcher syntax of a route', () => {
    const config = load(
      `${ONE_RECEIVER}route:\n  receiver: team\n  group_wait: 1h30m\n  repeat_interval: 1w\n  routes:\n  - matchers: ['{severity=~"(?i)CRIT.*", team="a"}', 'env!=dev']\n    receiver: team\n    group_by: [alertname]\n`,
    );
    expect(config.route.group_wait).toBe(90 * M);
    expect(config.route.repeat_interval).toBe(7 * 24 * 60 * M);
    expect(config.route.routes[0]!.matchers.map((m) => `${m.label}${m.op}${m.value}`)).toEqual(['severity=~(?i)CRIT.*', 'team=a', 'env!=dev']);
    expect(routesFor(config.route, { severity: 'critical', team: 'a' })[0]!.groupBy).toEqual(['alertname']);
    expect(routesFor(config.route, { severity: 'critical', team: 'a', env: 'dev' })[0]!.id).toBe('root');
  });

  it("reads a number, a boolean or a null written bare in match as the text written, as Go's YAML does for Alertmanager", () => {
    const config = load(
      `${ONE_RECEIVER}route:\n  receiver: team\n  routes:\n  - match: { test: 2, ver: 1.10, hex: 0x1F, canary: True, gone: ~ }\n    receiver: team\n    group_by: [test]\n`,
    );
    expect(routesFor(config.route, { test: '2', ver: '1.10', hex: '0x1F', canary: 'True' })[0]!.groupBy).toEqual(['test']);
    for (const wrong of [{ ver: '1.1' }, { hex: '31' }, { canary: 'true' }, { gone: 'x' }]) {
      expect(routesFor(config.route, { test: '2', ver: '1.10', hex: '0x1F', canary: 'True', ...wrong })[0]!.id, JSON.stringify(wrong)).toBe('root');
    }
  });
});

function alert(fingerprint: string, status: 'firing' | 'resolved', labels: Record<string, string>, at: number): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: `${fingerprint}-${status}-${at}`,
    host: 'h1',
    source: 'test',
    ts: new Date(at).toISOString(),
    labels,
    data: {
      fingerprint,
      status,
      severity: 'warning',
      category: 'thermal',
      rule: 'r',
      summary: fingerprint,
      starts_at: new Date(at).toISOString(),
      evidence: [],
    },
  });
}
const sends = (ds: Decision[]) =>
  ds.flatMap((d) => ('send' in d ? [`${d.send.receiver}:${d.send.alerts.map((a) => `${a.fingerprint}/${a.status}`).join(',')}`] : [])).sort();
const suppressions = (ds: Decision[]) => ds.flatMap((d) => ('suppressed' in d ? [`${d.suppressed.receiver}:${d.suppressed.reason}`] : []));

describe('an Alertmanager file behaves as in Alertmanager', () => {
  const T = Date.parse('2026-06-07T03:00:00Z'); // a Sunday, 03:00 UTC

  it("groups by every label with '...', one group per label set", () => {
    const core = new NotifierCore(load(`${ONE_RECEIVER}route:\n  receiver: team\n  group_by: ['...']\n  group_wait: 10s\n`));
    const state = emptyNotifierState();
    core.ingest(state, alert('a', 'firing', { alertname: 'X', instance: 'i1' }, T), T);
    core.ingest(state, alert('b', 'firing', { alertname: 'X', instance: 'i2' }, T), T);
    expect(sends(core.flush(state, T + 10 * S))).toEqual(['team:a/firing', 'team:b/firing']);
  });

  it('groups everything of a route together when group_by is not set (Alertmanager default)', () => {
    const core = new NotifierCore(load(`${ONE_RECEIVER}route:\n  receiver: team\n  group_wait: 10s\n`));
    const state = emptyNotifierState();
    core.ingest(state, alert('a', 'firing', { alertname: 'X' }, T), T);
    core.ingest(state, alert('b', 'firing', { alertname: 'Y' }, T), T);
    expect(sends(core.flush(state, T + 10 * S))).toEqual(['team:a/firing,b/firing']);
  });

  it("mutes only inside the interval (weekday range, Berlin time); a child does not inherit its parent's mute", () => {
    const config = load(
      `${ONE_RECEIVER}- name: other\n  webhook_configs: [{ url: 'http://127.0.0.1:9/o' }]\nroute:\n  receiver: team\n  group_wait: 0s\n  routes:\n  - matchers: [team=a]\n    receiver: team\n    mute_time_intervals: [office]\n    routes:\n    - matchers: [sub=x]\n      receiver: other\ntime_intervals:\n- name: office\n  time_intervals:\n  - weekdays: ['monday:friday']\n    times: [{ start_time: '09:00', end_time: '17:00' }]\n    location: Europe/Berlin\n`,
    );
    const core = new NotifierCore(config);
    const state = emptyNotifierState();
    // Sunday 03:00: outside a Monday-to-Friday interval, so it is sent (the old shape muted it).
    core.ingest(state, alert('sun', 'firing', { team: 'a' }, T), T);
    expect(sends(core.flush(state, T))).toEqual(['team:sun/firing']);
    const mondayBerlin10 = Date.parse('2026-06-08T08:00:00Z'); // 10:00 in Berlin (CEST)
    expect(suppressions(core.ingest(state, alert('mon', 'firing', { team: 'a' }, mondayBerlin10), mondayBerlin10))).toEqual(['team:muted']);
    // The child route names no interval: Alertmanager does not inherit mute_time_intervals.
    core.ingest(state, alert('child', 'firing', { team: 'a', sub: 'x' }, mondayBerlin10), mondayBerlin10);
    expect(sends(core.flush(state, mondayBerlin10))).toEqual(['other:child/firing']);
  });

  it('ignores an inhibition source that matches both sides when the target matches both too (inhibit/inhibit.go)', () => {
    const core = new NotifierCore(
      load(
        `${ONE_RECEIVER}route:\n  receiver: team\n  group_by: ['...']\n  group_wait: 0s\ninhibit_rules:\n- source_matchers: [alertname=Down]\n  target_matchers: ['alertname=~".+"']\n  equal: [cluster]\n`,
      ),
    );
    const state = emptyNotifierState();
    core.ingest(state, alert('d1', 'firing', { alertname: 'Down', cluster: 'c1', instance: '1' }, T), T);
    // Another Down alert matches both sides: the first does not inhibit it (else each would mute the other).
    core.ingest(state, alert('d2', 'firing', { alertname: 'Down', cluster: 'c1', instance: '2' }, T), T);
    // A plain target is inhibited.
    expect(suppressions(core.ingest(state, alert('t', 'firing', { alertname: 'Slow', cluster: 'c1' }, T), T))).toEqual(['team:inhibited']);
    expect(sends(core.flush(state, T))).toEqual(['team:d1/firing', 'team:d2/firing']);
  });

  it('sends to every integration of a receiver; one with send_resolved: false is not told of the resolve', () => {
    const config = load(
      "receivers:\n- name: team\n  webhook_configs:\n  - url: 'http://127.0.0.1:9/a'\n  - url: 'http://127.0.0.1:9/b'\n    send_resolved: false\nroute:\n  receiver: team\n  group_wait: 0s\n  group_interval: 1m\n",
    );
    expect(config.integrations.team).toEqual(['team/webhook/0', 'team/webhook/1']);
    const core = new NotifierCore(config);
    const state = emptyNotifierState();
    core.ingest(state, alert('a', 'firing', { alertname: 'X' }, T), T);
    expect(sends(core.flush(state, T))).toEqual(['team/webhook/0:a/firing', 'team/webhook/1:a/firing']);
    core.ingest(state, alert('a', 'resolved', { alertname: 'X' }, T + M), T + M);
    expect(sends(core.flush(state, T + M))).toEqual(['team/webhook/0:a/resolved']);
  });

  it('loads the bundled routes and parses through the schema as before', () => {
    expect(loadRoutes().ok).toBe(true);
    const parsed = parseYamlText('x.yaml', stringify({ receivers: [{ name: 'r', channel: 'record' }], route: { receiver: 'r' } }), RoutesFile);
    expect(parsed.ok && parsed.value.route.group_by).toBeUndefined();
  });
});

describe("Alertmanager's slack_configs.channel", () => {
  it("is mapped: the message names the channel, as Alertmanager's does", async () => {
    const { createServer } = await import('node:http');
    const { createChannel } = await import('./channels/registry.ts');
    const bodies: { channel?: string }[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(text) as { channel?: string });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/services/T/B/x`;
      const file = RoutesFile.parse({ receivers: [{ name: 'team', slack_configs: [{ api_url: url, channel: '#gpu-alerts' }] }], route: { receiver: 'team' } });
      const result = await createChannel(file.receivers[0]!, {}).send({ id: 'n1', receiver: 'team', group: 'g', reason: 'first', alerts: [], firing: 0 });
      expect(result.ok).toBe(true);
      expect(bodies[0]!.channel).toBe('#gpu-alerts');
    } finally {
      server.close();
    }
  });
});
