// Firing alerts as the notifier holds them, with their evidence and what holds them back
// (silences, inhibitions); incidents, each with its timeline to export (`gpualert timeline`'s export).
// A filter bar takes Alertmanager's matchers (`{host=~"gpu-node-0.*",severity="critical"}`): the
// notifier parses them, with its own parser and linear-time regexes, as `/api/v2/alerts?filter=`
// does; the list can be grouped by any label or by receiver, as Alertmanager's UI and Karma do.
import { call, download, Unauthorized } from './api.js';
import { esc, pill, when } from './dom.js';

/** The timeline export starts this long before an incident's first alert (what led to it) and ends this long after its last (what followed), or now. */
const LEAD_MS = 15 * 60_000;
const TAIL_MS = 30 * 60_000;
/** Grouping by receiver: not a label, so a name no label can have. */
const BY_RECEIVER = '@receiver';

function matcher(name, value) {
  return `${name}="${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** What the page shows, from the hash (`#/alerts/<filter=…&group=…>`). */
export function alertsView(rest) {
  const params = new URLSearchParams(rest[0] ?? '');
  return { filter: params.get('filter') ?? '', group: params.get('group') ?? '' };
}

function alertsHash(view) {
  const params = new URLSearchParams();
  if (view.filter.trim() !== '') params.set('filter', view.filter.trim());
  if (view.group !== '') params.set('group', view.group);
  const text = params.toString();
  return text === '' ? '#/alerts' : `#/alerts/${encodeURIComponent(text)}`;
}

/** The alerts the filter selects; a filter the notifier refuses comes back as its message, not a page error. */
export async function fetchAlerts(rest) {
  const view = alertsView(rest);
  const query = view.filter.trim() === '' ? '' : `?${new URLSearchParams({ filter: view.filter.trim() })}`;
  try {
    return { view, data: await call('GET', `/v1/alerts${query}`) };
  } catch (error) {
    if (error instanceof Unauthorized || !/^400: /.test(error.message)) throw error;
    return { view, data: { alerts: [], incidents: [], omitted: 0 }, error: error.message.replace(/^400: /, '') };
  }
}

/** Evidence lines under the summary; past three, folded under a count. */
function evidence(lines) {
  if (lines.length === 0) return '';
  const list = `<ul class="evidence">${lines.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>`;
  return lines.length <= 3 ? list : `<details><summary class="muted">${lines.length} pieces of evidence</summary>${list}</details>`;
}

function alertRow(a, now) {
  const l = a.labels;
  const silenceWith = [
    l.host !== undefined ? matcher('host', l.host) : null,
    l.gpu !== undefined ? matcher('gpu', l.gpu) : null,
    l.rule !== undefined ? matcher('rule', l.rule) : l.alertname !== undefined ? matcher('alertname', l.alertname) : null,
  ].filter((m) => m !== null);
  // A silence for some receivers only (a maintenance window's: the pager) says whom it holds the alert from; the others still hear of it.
  const only = a.silencedFor && a.silencedFor.length < a.receivers.length ? ` (held from ${a.silencedFor.map(esc).join(', ')} only)` : '';
  const held =
    a.silencedBy.length > 0 ? `silenced by ${a.silencedBy.map(esc).join(', ')}${only}` : a.inhibitedBy.length > 0 ? `inhibited by ${a.inhibitedBy.length}` : '';
  return `<tr data-fingerprint="${esc(a.fingerprint)}" data-state="${esc(a.state)}"><td>${pill(l.severity ?? 'warning')}</td>
<td>${esc(l.host ?? l.instance ?? '')}${l.gpu !== undefined ? ` GPU ${esc(l.gpu)}` : ''}</td><td>${esc(l.category ?? '')} <span class="muted">${esc(l.rule ?? l.alertname ?? '')}</span></td>
<td>${esc(a.summary)}${a.description ? `<br><span class="muted">${esc(a.description)}</span>` : ''}${evidence(a.evidence)}</td>
<td>${when(Date.parse(a.startsAt), now)}</td><td>${esc(a.state)} <span class="muted">${held}</span></td>
<td><a href="#/silences/with/${encodeURIComponent(silenceWith.join('\n'))}">silence…</a></td></tr>`;
}

/** The alerts by the chosen label's value (or receiver: an alert sent to two is in both), the largest group first; one group of all without a choice. */
function groupsOf(alerts, group) {
  if (group === '') return [{ key: null, alerts }];
  const groups = new Map();
  for (const a of alerts) {
    const keys = group === BY_RECEIVER ? (a.receivers.length > 0 ? a.receivers : ['']) : [Object.hasOwn(a.labels, group) ? a.labels[group] : ''];
    for (const key of keys) {
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(a);
    }
  }
  return [...groups].map(([key, list]) => ({ key, alerts: list })).sort((x, y) => y.alerts.length - x.alerts.length || x.key.localeCompare(y.key));
}

function groupTitle(group, key) {
  const name = group === BY_RECEIVER ? 'receiver' : group;
  return key === '' ? `no ${esc(name)}` : `${esc(name)}="${esc(key)}"`;
}

const HEADER = '<tr><th>severity</th><th>where</th><th>what</th><th>summary and evidence</th><th>since</th><th>state</th><th></th></tr>';

function filterBar(view, labels, error) {
  const options = [['', 'nothing'], [BY_RECEIVER, 'receiver'], ...labels.map((l) => [l, l])];
  if (view.group !== '' && !options.some(([v]) => v === view.group)) options.push([view.group, view.group]);
  return `<form id="alert-filter" class="toolbar filter">
<label for="filter">filter</label><input id="filter" class="mono" spellcheck="false" value="${esc(view.filter)}" placeholder='{host=~"gpu-node-0.*",severity="critical"}' aria-describedby="filter-error">
<label for="group-by">group by</label><select id="group-by">${options.map(([v, text]) => `<option value="${esc(v)}"${v === view.group ? ' selected' : ''}>${esc(text)}</option>`).join('')}</select>
<button type="submit">Apply</button>${view.filter !== '' ? ' <button type="button" id="filter-clear" class="plain">clear</button>' : ''}
</form>
<p id="filter-error" class="error" role="alert">${error ? esc(error) : ''}</p>`;
}

export function drawAlerts(main, shown, showError) {
  const { data, view, error } = shown;
  const now = Date.now();
  const labels = [...new Set(data.alerts.flatMap((a) => Object.keys(a.labels)))].sort();
  const incidents = data.incidents
    .map(
      (
        i,
      ) => `<tr data-incident="${esc(i.id)}"><td class="mono">${esc(i.id)}</td><td>${esc(i.host)}</td><td>${pill(i.severity)}</td><td>${when(i.since, now)}</td><td>${i.alerts.length}</td>
<td>${['html', 'md', 'json'].map((f) => `<button type="button" data-export="${esc(i.id)}" data-since="${i.since}" data-last="${i.last}" data-format="${f}">timeline .${f}</button>`).join(' ')}</td></tr>`,
    )
    .join('');
  const groups = groupsOf(data.alerts, view.group);
  const body = groups
    .map(
      (g) =>
        `<tbody${g.key === null ? '' : ` data-group="${esc(g.key)}"`}>${g.key === null ? '' : `<tr class="group"><th colspan="7">${groupTitle(view.group, g.key)} <span class="muted">${g.alerts.length} alert${g.alerts.length === 1 ? '' : 's'}</span></th></tr>`}${g.alerts.map((a) => alertRow(a, now)).join('')}</tbody>`,
    )
    .join('');
  const filtered = view.filter.trim() !== '' ? ' matching the filter' : '';
  main.innerHTML = `<h1>Alerts &amp; incidents <span class="muted" id="alert-count">${data.alerts.length} firing${filtered}${data.omitted > 0 ? `, ${data.omitted} more left out` : ''}</span></h1>
${filterBar(view, labels, error)}
<h2>Incidents</h2>
${incidents ? `<table><tr><th>incident</th><th>host</th><th>worst</th><th>since</th><th>alerts</th><th>export</th></tr>${incidents}</table>` : '<p class="muted">none open</p>'}
<h2>Firing alerts</h2>
${data.alerts.length > 0 ? `<table id="alerts"><thead>${HEADER}</thead>${body}</table>` : `<p class="muted">none firing${filtered}</p>`}`;
  const form = main.querySelector('#alert-filter');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = alertsHash({ filter: main.querySelector('#filter').value, group: main.querySelector('#group-by').value });
  });
  main.querySelector('#group-by').addEventListener('change', () => form.requestSubmit());
  main.querySelector('#filter-clear')?.addEventListener('click', () => {
    location.hash = alertsHash({ filter: '', group: view.group });
  });
  for (const button of main.querySelectorAll('button[data-export]')) {
    button.addEventListener('click', () => {
      const id = button.dataset.export;
      const from = new Date(Number(button.dataset.since) - LEAD_MS).toISOString();
      const to = new Date(Math.min(Date.now() + 60_000, Number(button.dataset.last) + TAIL_MS)).toISOString();
      const q = new URLSearchParams({ from, to, incident: id, format: button.dataset.format });
      download(`/v1/timeline?${q}`, `incident-${id}.${button.dataset.format}`).catch(showError);
    });
  }
}
