import { pathToFileURL } from 'node:url';
import { emptyNotifierState, NotifierCore, RoutesFile, type NotifierState } from '@gpualert/notify';
import { alertEnvelope, alertQuery, listAlertGroups, listAlerts, type NotifierView } from '@gpualert/notifier';
import { parse as parseYaml } from 'yaml';
import { format, median } from './harness.ts';

/** A routing tree of the usual shape: teams by regex, severities, a continue, a few dozen routes. */
const ROUTES = RoutesFile.parse(
  parseYaml(`
receivers:
${Array.from({ length: 20 }, (_, i) => `- name: team-${i}\n  webhook_configs: [{ url: 'http://127.0.0.1:9/${i}' }]`).join('\n')}
- name: default
  webhook_configs: [{ url: 'http://127.0.0.1:9/default' }]
- name: pager
  webhook_configs: [{ url: 'http://127.0.0.1:9/pager' }]
route:
  receiver: default
  group_by: [alertname, cluster]
  routes:
  - matchers: ['severity="critical"']
    receiver: pager
    continue: true
${Array.from({ length: 20 }, (_, i) => `  - matchers: ['team=~"team-${i}|squad-${i}"']\n    receiver: team-${i}\n    routes:\n    - matchers: ['env=~"prod|staging"', 'alertname=~"Gpu.*"']\n      group_by: ['...']`).join('\n')}
inhibit_rules:
- source_matchers: [severity="critical"]
  target_matchers: [severity="warning"]
  equal: [instance]
`),
);

/** `GET /api/v2/alerts` over 10,000 firing alerts: one call's latency, the cache cold and warm, and filtered. */
export async function benchAlertmanagerApi(): Promise<void> {
  console.log('\n## Alertmanager API: GET /api/v2/alerts with 10,000 firing alerts');
  const core = new NotifierCore(ROUTES);
  const state: NotifierState = emptyNotifierState();
  const now = Date.now();
  for (let i = 0; i < 10_000; i += 1) {
    const e = alertEnvelope(
      {
        labels: {
          alertname: i % 3 ? 'GpuHot' : 'XidError',
          team: `team-${i % 20}`,
          env: i % 2 ? 'prod' : 'dev',
          instance: `gpu-${i % 999}:9400`,
          cluster: `c${i % 7}`,
          severity: i % 10 === 0 ? 'critical' : 'warning',
        },
        annotations: { summary: `alert ${i}`, runbook_url: 'https://runbooks.example/gpu' },
      },
      now,
    );
    if (typeof e === 'string') throw new Error(e);
    core.ingest(state, e, now);
  }
  const view: NotifierView = { routes: ROUTES, state: () => state };
  const time = (name: string, query: string, runs: number, fn: (q: ReturnType<typeof alertQuery>) => number) => {
    const q = alertQuery(new URLSearchParams(query));
    const ms: number[] = [];
    let count = 0;
    for (let i = 0; i < runs; i += 1) {
      const t = performance.now();
      count = fn(q);
      ms.push(performance.now() - t);
    }
    console.log(`${name.padEnd(58)} first ${format(ms[0]!).padStart(8)} ms, then median ${format(median(ms.slice(1))).padStart(8)} ms  (${count} alerts)`);
  };
  const list = (q: ReturnType<typeof alertQuery>) => (typeof q === 'string' ? 0 : listAlerts(view, q, Date.now()).length);
  time('GET /api/v2/alerts', '', 7, list);
  time('GET /api/v2/alerts?filter=team="team-3"', 'filter=team%3D%22team-3%22', 7, list);
  time('GET /api/v2/alerts?receiver=pager', 'receiver=pager', 7, list);
  time('GET /api/v2/alerts?inhibited=false&silenced=false', 'inhibited=false&silenced=false', 7, list);
  time('GET /api/v2/alerts/groups', '', 5, (q) => (typeof q === 'string' ? 0 : listAlertGroups(view, q, Date.now()).reduce((n, g) => n + g.alerts.length, 0)));
  await Promise.resolve();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchAlertmanagerApi();
