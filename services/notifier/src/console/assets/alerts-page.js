// Firing alerts as the notifier holds them, with their evidence and what holds them back
// (silences, inhibitions); incidents, each with its timeline to export (`gpualert timeline`'s export).
import { download } from './api.js';
import { esc, pill, when } from './dom.js';

/** The timeline export starts this long before an incident's first alert (what led to it) and ends this long after its last (what followed), or now. */
const LEAD_MS = 15 * 60_000;
const TAIL_MS = 30 * 60_000;

function matcher(name, value) {
  return `${name}="${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Evidence lines under the summary; past three, folded under a count. */
function evidence(lines) {
  if (lines.length === 0) return '';
  const list = `<ul class="evidence">${lines.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>`;
  return lines.length <= 3 ? list : `<details><summary class="muted">${lines.length} pieces of evidence</summary>${list}</details>`;
}

export function drawAlerts(main, data, showError) {
  const now = Date.now();
  const incidents = data.incidents
    .map(
      (
        i,
      ) => `<tr data-incident="${esc(i.id)}"><td class="mono">${esc(i.id)}</td><td>${esc(i.host)}</td><td>${pill(i.severity)}</td><td>${when(i.since, now)}</td><td>${i.alerts.length}</td>
<td>${['html', 'md', 'json'].map((f) => `<button type="button" data-export="${esc(i.id)}" data-since="${i.since}" data-last="${i.last}" data-format="${f}">timeline .${f}</button>`).join(' ')}</td></tr>`,
    )
    .join('');
  const rows = data.alerts
    .map((a) => {
      const l = a.labels;
      const silenceWith = [
        l.host !== undefined ? matcher('host', l.host) : null,
        l.gpu !== undefined ? matcher('gpu', l.gpu) : null,
        l.rule !== undefined ? matcher('rule', l.rule) : l.alertname !== undefined ? matcher('alertname', l.alertname) : null,
      ].filter((m) => m !== null);
      const held =
        a.silencedBy.length > 0 ? `silenced by ${a.silencedBy.map(esc).join(', ')}` : a.inhibitedBy.length > 0 ? `inhibited by ${a.inhibitedBy.length}` : '';
      return `<tr data-fingerprint="${esc(a.fingerprint)}" data-state="${esc(a.state)}"><td>${pill(l.severity ?? 'warning')}</td>
<td>${esc(l.host ?? l.instance ?? '')}${l.gpu !== undefined ? ` GPU ${esc(l.gpu)}` : ''}</td><td>${esc(l.category ?? '')} <span class="muted">${esc(l.rule ?? l.alertname ?? '')}</span></td>
<td>${esc(a.summary)}${a.description ? `<br><span class="muted">${esc(a.description)}</span>` : ''}${evidence(a.evidence)}</td>
<td>${when(Date.parse(a.startsAt), now)}</td><td>${esc(a.state)} <span class="muted">${held}</span></td>
<td><a href="#/silences/with/${encodeURIComponent(silenceWith.join('\n'))}">silence…</a></td></tr>`;
    })
    .join('');
  main.innerHTML = `<h1>Alerts &amp; incidents <span class="muted">${data.alerts.length} firing${data.omitted > 0 ? `, ${data.omitted} more left out` : ''}</span></h1>
<h2>Incidents</h2>
${incidents ? `<table><tr><th>incident</th><th>host</th><th>worst</th><th>since</th><th>alerts</th><th>export</th></tr>${incidents}</table>` : '<p class="muted">none open</p>'}
<h2>Firing alerts</h2>
${rows ? `<table id="alerts"><tr><th>severity</th><th>where</th><th>what</th><th>summary and evidence</th><th>since</th><th>state</th><th></th></tr>${rows}</table>` : '<p class="muted">none firing</p>'}`;
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
