import { charts, escapeHtml } from './gpu-chart.ts';
import type { Duration, Moment, Postmortem } from './postmortem.ts';
import type { AcknowledgementRecord, MinuteSummary, NotificationAttempt, Timeline } from './timeline.ts';

export { chartedGpus, MAX_CHARTED_GPUS } from './gpu-chart.ts';

export const FORMATS = ['md', 'json', 'csv', 'html'] as const;
export type Format = (typeof FORMATS)[number];

export function render(timeline: Timeline, format: Format): string {
  switch (format) {
    case 'md':
      return markdown(timeline);
    case 'json':
      return `${JSON.stringify(timeline, null, 2)}\n`;
    case 'csv':
      return csv(timeline);
    case 'html':
      return html(timeline);
  }
}

function header(t: Timeline): string[] {
  const lines = [`# ${t.incident ? `Incident: ${t.incident.summary}` : 'GPU incident timeline'}`, ''];
  const i = t.incident;
  if (i) {
    const where =
      i.gpus && i.gpus.length > 0 ? i.gpus.map((g) => `${g.host} GPU ${g.gpu}`).join(', ') : `${i.host}${i.gpu !== undefined ? `, GPU ${i.gpu}` : ''}`;
    lines.push(
      '| | |',
      '|---|---|',
      `| Severity | ${i.severity} |`,
      `| Where | ${cell(where)} |`,
      `| Started | ${i.startsAt} |`,
      `| Ended | ${t.postmortem?.resolved?.ts ?? i.endsAt ?? 'still firing'} |`,
      `| Alerts | ${(i.fingerprints ?? [i.fingerprint]).map((f) => `\`${f}\``).join(' ')} |`,
      '',
    );
  }
  lines.push(`Range ${t.from} – ${t.to}${t.host ? ` on ${t.host}` : ''}: ${t.entries.length} events.`, '');
  return lines;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function markdown(t: Timeline): string {
  const lines = header(t);
  if (t.entries.length === 0) lines.push('Nothing happened in this range: no kernel events, provider notices, alerts or notifications.', '');
  else {
    lines.push('## Timeline', '', '| Time (UTC) | Source | Host | GPU | What | Detail |', '|---|---|---|---|---|---|');
    for (const e of t.entries)
      lines.push(`| ${e.ts.replace('T', ' ').replace('Z', '')} | ${e.source} | ${e.host} | ${e.gpu ?? ''} | ${cell(e.title)} | ${cell(e.detail ?? '')} |`);
    lines.push('');
  }
  lines.push(...markdownPostmortem(t));
  if (t.metrics.length > 0) {
    lines.push('## GPU metrics around it (per minute: min / mean / max)', '');
    const byGpu = new Map<string, MinuteSummary[]>();
    for (const m of t.metrics) byGpu.set(`${m.host} GPU ${m.gpu}`, [...(byGpu.get(`${m.host} GPU ${m.gpu}`) ?? []), m]);
    for (const [gpu, rows] of byGpu) {
      lines.push(`### ${gpu}`, '', '| Minute | Metric | Min | Mean | Max |', '|---|---|---|---|---|');
      for (const m of rows) lines.push(`| ${m.minute.slice(11, 16)} | ${m.metric} | ${m.min} | ${m.mean} | ${m.max} |`);
      lines.push('');
    }
  }
  return `${lines.join('\n')}\n`;
}

function csvField(value: string | number | undefined): string {
  const text = value === undefined ? '' : String(value);
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csv(t: Timeline): string {
  const rows = [['time', 'source', 'host', 'gpu', 'severity', 'what', 'detail', 'id'].join(',')];
  for (const e of t.entries) rows.push([e.ts, e.source, e.host, e.gpu, e.severity, e.title, e.detail, e.id].map(csvField).join(','));
  return `${rows.join('\n')}\n`;
}

/** "4 min 10 s", "2 h 5 min", "3 d 4 h": a duration as a reader says it. */
export function humanDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min${s % 60 ? ` ${s % 60} s` : ''}`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h${m % 60 ? ` ${m % 60} min` : ''}`;
  return `${Math.floor(h / 24)} d${h % 24 ? ` ${h % 24} h` : ''}`;
}

function durationText(d: Duration): string {
  return 'ms' in d ? humanDuration(d.ms) : `not measured: ${d.notMeasured}`;
}

/** The post-mortem's four figures, each with the two moments it runs between. */
function durationRows(p: Postmortem): [string, string, Moment | undefined, Moment | undefined][] {
  return [
    ['Time to detect', durationText(p.toDetect), p.firstSignal, p.firstAlert],
    ['Time to notify', durationText(p.toNotify), p.firstAlert, p.firstNotified],
    ['Time to acknowledge', durationText(p.toAcknowledge), p.firstAlert, p.firstAcknowledged],
    ['Time to resolve', durationText(p.toResolve), p.firstAlert, p.resolved],
  ];
}

const moment = (m: Moment | undefined) => (m ? `${m.ts.replace('T', ' ').replace('Z', '')}: ${m.what}` : '—');

function attemptCells(n: NotificationAttempt): string[] {
  return [
    n.ts.replace('T', ' ').replace('Z', ''),
    n.receiver,
    n.channel,
    n.fingerprints.join(' '),
    n.reason,
    n.outcome,
    String(n.attempt),
    n.retry_in_ms !== undefined ? `in ${humanDuration(n.retry_in_ms)}` : n.outcome === 'failed' && n.notification_id !== undefined ? 'gave up' : '',
    n.error ?? '',
  ];
}
const ATTEMPT_HEADERS = ['Time (UTC)', 'Receiver', 'Channel', 'Alerts', 'Reason', 'Outcome', 'Attempt', 'Next try', 'Error'];

function ackCells(a: AcknowledgementRecord): string[] {
  return [a.ts.replace('T', ' ').replace('Z', ''), a.pager, a.action, a.by ?? '', a.fingerprint, a.pager_incident, a.title ?? ''];
}
const ACK_HEADERS = ['Time (UTC)', 'Pager', 'What', 'By', 'Alert', 'Pager incident', 'Title'];

/** The sections a post-mortem adds to Markdown: the figures, who was told, what they did. */
function markdownPostmortem(t: Timeline): string[] {
  const lines: string[] = [];
  if (t.postmortem) {
    lines.push('## How long it took', '', '| | | from | to |', '|---|---|---|---|');
    for (const [name, value, a, b] of durationRows(t.postmortem)) lines.push(`| ${name} | ${cell(value)} | ${cell(moment(a))} | ${cell(moment(b))} |`);
    lines.push('');
  }
  if (t.notifications.length > 0) {
    lines.push('## Who was told', '', `| ${ATTEMPT_HEADERS.join(' | ')} |`, `|${ATTEMPT_HEADERS.map(() => '---').join('|')}|`);
    for (const n of t.notifications) lines.push(`| ${attemptCells(n).map(cell).join(' | ')} |`);
    lines.push('');
  }
  if (t.acknowledgements.length > 0) {
    lines.push('## Acknowledgements from the pager', '', `| ${ACK_HEADERS.join(' | ')} |`, `|${ACK_HEADERS.map(() => '---').join('|')}|`);
    for (const a of t.acknowledgements) lines.push(`| ${ackCells(a).map(cell).join(' | ')} |`);
    lines.push('');
  }
  return lines;
}

const escape = escapeHtml;

const PRINT_CSS = `body{font-family:sans-serif;margin:2em;color:#212529;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:1.6em;border-bottom:1px solid #dee2e6}
table{border-collapse:collapse;font-size:13px;width:100%}td,th{border-bottom:1px solid #dee2e6;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f5}dl{display:grid;grid-template-columns:max-content auto;gap:4px 16px}dt{font-weight:bold}
figure{margin:1em 0}figcaption{font-size:12px;color:#495057;max-width:960px}svg{max-width:100%;height:auto}
tr.alert td{background:#fff4e6}tr.kernel td{background:#fff5f5}tr.acknowledgement td{background:#e6fcf5}
table.timeline td:nth-child(-n+3){white-space:nowrap}tr.failed td{background:#fff5f5}tr.suppressed td{color:#868e96}td.outcome{font-weight:bold}
table.durations{width:auto}table.durations th{white-space:nowrap}table.durations td.figure{font-weight:bold;white-space:nowrap}table.durations .why{display:block;font-weight:normal;color:#868e96;font-size:12px;white-space:normal;max-width:40em}
@page{size:A4 landscape;margin:12mm}
@media print{body{margin:0;max-width:none;font-size:11px}table{font-size:10px}figure,tr,dl,table.durations{break-inside:avoid}h2{break-after:avoid}
th{background:#eee;-webkit-print-color-adjust:exact;print-color-adjust:exact}svg,tr td{-webkit-print-color-adjust:exact;print-color-adjust:exact}
figure{page-break-inside:avoid}}`;

function htmlTable(className: string, headers: readonly string[], rows: readonly { cls?: string; cells: readonly string[] }[], empty: string): string {
  const body = rows
    .map(
      (r) =>
        `<tr${r.cls ? ` class="${r.cls}"` : ''}>${r.cells.map((c, i) => `<td${headers[i] === 'Outcome' ? ' class="outcome"' : ''}>${escape(c)}</td>`).join('')}</tr>`,
    )
    .join('\n');
  return `<table class="${className}"><thead><tr>${headers.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>\n${body || `<tr><td colspan="${headers.length}">${empty}</td></tr>`}\n</tbody></table>`;
}

/** One self-contained HTML file that prints well: facts, how long it took, the incident's GPUs charted, who was told, what they did, the timeline. No script, no external resource. */
function html(t: Timeline): string {
  const title = t.incident ? `Incident: ${t.incident.summary}` : 'GPU incident timeline';
  const i = t.incident;
  const facts = i
    ? `<dl class="facts"><dt>Severity</dt><dd>${i.severity}</dd><dt>Where</dt><dd>${escape(
        i.gpus && i.gpus.length > 0 ? i.gpus.map((g) => `${g.host} GPU ${g.gpu}`).join(', ') : `${i.host}${i.gpu !== undefined ? `, GPU ${i.gpu}` : ''}`,
      )}</dd><dt>Started</dt><dd>${i.startsAt}</dd><dt>Ended</dt><dd>${t.postmortem?.resolved?.ts ?? i.endsAt ?? 'still firing'}</dd><dt>Alerts</dt><dd><code>${escape((i.fingerprints ?? [i.fingerprint]).join(' '))}</code></dd>${
        t.postmortem
          ? `<dt>Notifications</dt><dd>${t.postmortem.attempts.sent} delivered, ${t.postmortem.attempts.failed} failed (${t.postmortem.attempts.retried} retried), ${t.postmortem.attempts.suppressed} held back</dd>`
          : ''
      }</dl>`
    : '';
  const durations = t.postmortem
    ? `<h2>How long it took</h2><table class="durations"><tbody>${durationRows(t.postmortem)
        .map(
          ([name, value, a, b]) =>
            `<tr><th>${name}</th><td class="figure">${value.startsWith('not measured: ') ? `not measured<span class="why">${escape(value.slice('not measured: '.length))}</span>` : escape(value)}</td><td>${escape(moment(a))}<br>→ ${escape(moment(b))}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  const attempts = htmlTable(
    'notifications',
    ATTEMPT_HEADERS,
    t.notifications.map((n) => ({ cls: n.outcome, cells: attemptCells(n) })),
    'No notification was recorded.',
  );
  const acks = htmlTable(
    'acknowledgements',
    ACK_HEADERS,
    t.acknowledgements.map((a) => ({ cells: ackCells(a) })),
    'No acknowledgement came from a pager.',
  );
  const entries = htmlTable(
    'timeline',
    ['Time (UTC)', 'Source', 'Host', 'GPU', 'What', 'Detail'],
    t.entries.map((e) => ({
      cls: e.source,
      cells: [e.ts.replace('T', ' ').replace('Z', ''), e.source, e.host, e.gpu === undefined ? '' : String(e.gpu), e.title, e.detail ?? ''],
    })),
    'Nothing happened in this range.',
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>${PRINT_CSS}</style>
</head><body>
<h1>${escape(title)}</h1>
${facts}
<p>Range ${t.from} – ${t.to}${t.host ? ` on ${escape(t.host)}` : ''}: ${t.entries.length} events. Times are UTC, as each record was dated.</p>
${durations}
<h2>${i ? "The incident's GPUs" : 'GPUs'}</h2>
${charts(t)}
<h2>Who was told</h2>
${attempts}
<h2>Acknowledgements from the pager</h2>
${acks}
<h2>Timeline</h2>
${entries}
</body></html>
`;
}
