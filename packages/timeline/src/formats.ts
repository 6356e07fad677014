import type { MinuteSummary, Timeline } from './timeline.ts';

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
  const lines = [`# GPU incident timeline${t.incident ? `: ${t.incident.summary}` : ''}`, ''];
  if (t.incident) {
    lines.push(
      '| | |',
      '|---|---|',
      `| Severity | ${t.incident.severity} |`,
      `| Host | ${t.incident.host}${t.incident.gpu !== undefined ? `, GPU ${t.incident.gpu}` : ''} |`,
      `| Started | ${t.incident.startsAt} |`,
      `| Ended | ${t.incident.endsAt ?? 'still firing'} |`,
      `| Fingerprint | \`${t.incident.fingerprint}\` |`,
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

const COLORS: Record<string, string> = { temp_c: '#d9480f', power_w: '#1971c2', util_pct: '#2f9e44' };
const MARKS: Record<string, string> = {
  kernel: '#c92a2a',
  alert: '#e67700',
  notification: '#5f3dc4',
  provider: '#0b7285',
  collector: '#862e9c',
  inventory: '#495057',
  job: '#2b8a3e',
};

const RANK: Readonly<Record<string, number>> = { critical: 4, error: 3, warning: 2, info: 1 };
/** The most GPUs one export charts: past six, a reader looks at the table. */
export const MAX_CHARTED_GPUS = 6;

type Gpu = { readonly host: string; readonly gpu: number };

/**
 * The GPUs the chart draws: the incident's own first, then every GPU the range's alerts and kernel
 * events name, the most severe and the earliest first; with none of those, the first GPU with
 * samples (a quiet range). Never a healthy GPU picked for being first in the list while others
 * were failing.
 */
export function chartedGpus(t: Timeline, limit = MAX_CHARTED_GPUS): Gpu[] {
  const named = new Map<string, { gpu: Gpu; rank: number; first: string }>();
  const note = (host: string, gpu: number, rank: number, ts: string) => {
    const key = `${host}\u0000${gpu}`;
    const seen = named.get(key);
    if (!seen) named.set(key, { gpu: { host, gpu }, rank, first: ts });
    else named.set(key, { gpu: seen.gpu, rank: Math.max(seen.rank, rank), first: seen.first < ts ? seen.first : ts });
  };
  for (const e of t.entries) {
    if (e.gpu === undefined || (e.source !== 'alert' && e.source !== 'kernel')) continue;
    note(e.host, e.gpu, RANK[e.severity ?? ''] ?? (e.source === 'kernel' ? 3 : 0), e.ts);
  }
  const ranked = [...named.values()].sort((a, b) => b.rank - a.rank || (a.first < b.first ? -1 : a.first > b.first ? 1 : 0)).map((n) => n.gpu);
  const own = t.incident?.gpu !== undefined ? [{ host: t.incident.host, gpu: t.incident.gpu }] : [];
  const chosen = [...own, ...ranked.filter((g) => !own.some((o) => o.host === g.host && o.gpu === g.gpu))];
  if (chosen.length === 0 && t.metrics[0]) chosen.push({ host: t.metrics[0].host, gpu: t.metrics[0].gpu });
  return chosen.slice(0, limit);
}

/** One figure per charted GPU (chartedGpus): its temperature, power and utilisation per minute, with its own events marked. */
export function charts(t: Timeline, width = 900, height = 320): string {
  return chartedGpus(t)
    .map((gpu) => `<figure data-host="${escape(gpu.host)}" data-gpu="${gpu.gpu}">${chart(t, gpu, width, height)}</figure>`)
    .join('\n');
}

/** An SVG chart of one GPU's temperature, power and utilisation per minute, with its own and its host's event markers. */
export function chart(t: Timeline, focus: Gpu, width = 900, height = 320): string {
  const from = Date.parse(t.from);
  const to = Date.parse(t.to);
  const x = (at: number) => 50 + ((at - from) / Math.max(1, to - from)) * (width - 70);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escape(`${focus.host} GPU ${focus.gpu} around the incident`)}">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#fff"/>`,
    `<line x1="50" y1="${height - 30}" x2="${width - 20}" y2="${height - 30}" stroke="#868e96"/>`,
    `<text x="50" y="16" font-size="12" font-family="sans-serif">${escape(focus.host)} GPU ${focus.gpu}, per-minute means: ` +
      `<tspan fill="${COLORS.temp_c}">■ temperature °C</tspan> <tspan fill="${COLORS.power_w}">■ power W÷10</tspan> <tspan fill="${COLORS.util_pct}">■ utilisation %</tspan>` +
      ` · markers: <tspan fill="${MARKS.kernel}">kernel</tspan> <tspan fill="${MARKS.alert}">alert</tspan> <tspan fill="${MARKS.notification}">notification</tspan> <tspan fill="${MARKS.provider}">provider</tspan></text>`,
    `<text x="50" y="${height - 12}" font-size="11" font-family="sans-serif">${t.from.slice(11, 16)} UTC</text>`,
    `<text x="${width - 80}" y="${height - 12}" font-size="11" font-family="sans-serif">${t.to.slice(11, 16)} UTC</text>`,
  ];
  let drawn = 0;
  for (const metric of ['temp_c', 'power_w', 'util_pct'] as const) {
    const rows = t.metrics.filter((m) => m.host === focus.host && m.gpu === focus.gpu && m.metric === metric);
    if (rows.length === 0) continue;
    drawn += 1;
    const scale = metric === 'power_w' ? 10 : 1;
    const y = (v: number) => height - 30 - Math.min(1, v / scale / 110) * (height - 60);
    const points = rows.map((m) => `${x(Date.parse(m.minute) + 30_000).toFixed(1)},${y(m.mean).toFixed(1)}`).join(' ');
    parts.push(`<polyline class="series" data-metric="${metric}" fill="none" stroke="${COLORS[metric]}" stroke-width="2" points="${points}"/>`);
  }
  // A GPU that fell off the bus may have no sample in the range: say so rather than draw empty axes.
  if (drawn === 0)
    parts.push(
      `<text x="${width / 2}" y="${height / 2}" text-anchor="middle" font-size="13" font-family="sans-serif" fill="#868e96">no samples from this GPU in the range</text>`,
    );
  for (const e of t.entries) {
    if (e.host !== focus.host || (e.gpu !== undefined && e.gpu !== focus.gpu)) continue;
    const at = x(Date.parse(e.ts)).toFixed(1);
    parts.push(
      `<line class="marker" data-source="${e.source}" x1="${at}" y1="24" x2="${at}" y2="${height - 30}" stroke="${MARKS[e.source] ?? '#000'}" stroke-dasharray="3,3"><title>${escape(`${e.ts} ${e.title}`)}</title></line>`,
    );
  }
  parts.push('</svg>');
  return parts.join('');
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);
}

/** One self-contained HTML file: facts, the chart, the timeline. No script, no external resource. */
function html(t: Timeline): string {
  const rows = t.entries
    .map(
      (e) =>
        `<tr class="${e.source}"><td>${escape(e.ts.replace('T', ' ').replace('Z', ''))}</td><td>${e.source}</td><td>${escape(e.host)}</td><td>${e.gpu ?? ''}</td><td>${escape(e.title)}</td><td>${escape(e.detail ?? '')}</td></tr>`,
    )
    .join('\n');
  const facts = t.incident
    ? `<dl><dt>Severity</dt><dd>${t.incident.severity}</dd><dt>Host</dt><dd>${escape(t.incident.host)}${t.incident.gpu !== undefined ? `, GPU ${t.incident.gpu}` : ''}</dd><dt>Started</dt><dd>${t.incident.startsAt}</dd><dt>Ended</dt><dd>${t.incident.endsAt ?? 'still firing'}</dd><dt>Fingerprint</dt><dd><code>${t.incident.fingerprint}</code></dd></dl>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(t.incident ? `Timeline: ${t.incident.summary}` : 'GPU incident timeline')}</title>
<style>body{font-family:sans-serif;margin:2em;color:#212529}table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #dee2e6;padding:4px 8px;text-align:left;vertical-align:top}dl{display:grid;grid-template-columns:max-content auto;gap:4px 16px}tr.alert td{background:#fff4e6}tr.kernel td{background:#fff5f5}</style>
</head><body>
<h1>${escape(t.incident ? `Timeline: ${t.incident.summary}` : 'GPU incident timeline')}</h1>
${facts}
<p>Range ${t.from} – ${t.to}${t.host ? ` on ${escape(t.host)}` : ''}: ${t.entries.length} events.</p>
${charts(t)}
<table><thead><tr><th>Time (UTC)</th><th>Source</th><th>Host</th><th>GPU</th><th>What</th><th>Detail</th></tr></thead><tbody>
${rows || '<tr><td colspan="6">Nothing happened in this range.</td></tr>'}
</tbody></table>
</body></html>
`;
}
