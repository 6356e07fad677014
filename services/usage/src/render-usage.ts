import type { Reconciliation } from './reconcile.ts';
import type { StateHours, UsageReport } from './usage-report.ts';

export const USAGE_FORMATS = ['md', 'csv', 'json', 'html'] as const;
export type UsageFormat = (typeof USAGE_FORMATS)[number];

const STATES = ['busy', 'idle', 'broken', 'maintenance'] as const;
const COLORS: Record<(typeof STATES)[number], string> = { busy: '#2e7d32', idle: '#f9a825', broken: '#c62828', maintenance: '#1565c0' };

export function renderUsage(report: UsageReport, reconciliation: Reconciliation | undefined, format: UsageFormat): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(reconciliation ? { ...report, reconciliation } : report, null, 2)}\n`;
    case 'csv':
      return csv(report, reconciliation);
    case 'md':
      return markdown(report, reconciliation);
    case 'html':
      return html(report, reconciliation);
  }
}

const h2 = (v: number) => v.toFixed(2);
const money = (v: number, currency: string) => `${v.toFixed(2)} ${currency}`;
/**
 * A cell for Markdown, from a bill or a label (anyone's text): one line, no pipe that would split
 * the table, and nothing a renderer would obey: HTML (`<img onerror>`) is shown as text, and the
 * inline syntax (links, emphasis, code) is escaped.
 */
const cell = (v: string) =>
  v
    .replace(/[\r\n]+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\\`*_[\]()|!#~]/g, '\\$&');

function markdown(r: UsageReport, rec: Reconciliation | undefined): string {
  const out: string[] = [];
  out.push(`# GPU usage ${r.from} – ${r.to}`, '');
  out.push(`${r.total.gpus} GPUs, ${r.rollups} GPU-hour rollups; busy means utilisation at or above ${r.busy_threshold_pct.join('/') || '–'} %.`, '');
  out.push(`| ${cell(r.by)} | GPUs | up h | busy h | idle h | broken h | maintenance h | cost | idle cost | broken cost | unpriced h |`);
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const g of [...r.groups, r.total]) {
    out.push(
      `| ${g === r.total ? '**total**' : cell(g.key)} | ${g.gpus} | ${h2(g.hours.up)} | ${h2(g.hours.busy)} | ${h2(g.hours.idle)} | ${h2(g.hours.broken)} | ${h2(g.hours.maintenance)} | ${money(g.cost, r.currency)} | ${money(g.idle_cost, r.currency)} | ${money(g.broken_cost, r.currency)} | ${h2(g.unpriced_hours)} |`,
    );
  }
  out.push('', '## Top idle hosts', '', '| host | idle GPU-hours | idle cost |', '|---|---:|---:|');
  for (const t of r.top_idle_hosts) out.push(`| ${cell(t.key)} | ${h2(t.idle_hours)} | ${money(t.idle_cost, r.currency)} |`);
  out.push('', '## Top idle jobs', '', '| job | user | idle GPU-hours | idle cost |', '|---|---|---:|---:|');
  for (const t of r.top_idle_jobs) out.push(`| ${cell(t.key)} | ${cell(t.user ?? '')} | ${h2(t.idle_hours)} | ${money(t.idle_cost, r.currency)} |`);
  // Line by line: a bill of 200,000 rows spread into one push overflowed the stack.
  if (rec) {
    out.push('');
    for (const line of reconciliationMarkdown(rec, r.currency)) out.push(line);
  }
  return `${out.join('\n')}\n`;
}

function reconciliationMarkdown(rec: Reconciliation, currency: string): string[] {
  const out = [
    '## Bill against what gpualert saw',
    '',
    `${rec.bill_lines} billed instance rows in range, ${rec.other_rows} other rows, ${rec.error_count} rows refused.`,
    '',
  ];
  out.push(
    '| instance | host | billed h | seen h | billed, unseen h | billed cost | billed while broken h | broken cost | billed in maintenance h | maintenance cost |',
  );
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const i of rec.instances) {
    out.push(
      `| ${cell(i.instance)} | ${cell(i.host)} | ${h2(i.billed_hours)} | ${h2(i.seen_hours)} | ${h2(i.billed_unseen_hours)} | ${money(i.billed_cost, currency)} | ${h2(i.billed_broken_hours)} | ${money(i.broken_cost, currency)} | ${h2(i.billed_maintenance_hours)} | ${money(i.maintenance_cost, currency)} |`,
    );
  }
  const evidence = rec.instances.filter((i) => i.billed_broken_hours > 0 || i.billed_maintenance_hours > 0);
  if (evidence.length > 0) {
    out.push('', '### Evidence for a support case', '');
    for (const i of evidence) {
      out.push(
        `- **${cell(i.instance)}** (${cell(i.host)}): ${h2(i.billed_broken_hours)} h billed while broken (alerts ${i.broken_alerts.map(cell).join(', ') || '–'}), ${h2(i.billed_maintenance_hours)} h in provider maintenance (events ${i.maintenance_events.map(cell).join(', ') || '–'}); bill rows ${i.bill_rows.map(cell).join(', ')}`,
      );
    }
    for (const a of rec.alerts) {
      out.push(
        `- alert ${cell(a.fingerprint)}: ${cell(a.severity)} ${cell(a.category)} on ${cell(a.host)}${a.gpu !== undefined ? ` GPU ${a.gpu}` : ''}, ${cell(a.starts_at)} – ${cell(a.ends_at ?? 'still firing')}: ${cell(a.summary)}; events ${a.evidence.map(cell).join(', ') || '–'}`,
      );
    }
  }
  out.push('', '### Billed, never seen (orphans)', '', '| instance | billed h | billed cost | bill rows |', '|---|---:|---:|---|');
  for (const o of rec.orphans)
    out.push(`| ${cell(o.instance)} | ${h2(o.billed_hours)} | ${money(o.billed_cost, currency)} | ${o.bill_rows.slice(0, 3).map(cell).join(', ')} |`);
  out.push('', '### Seen, never billed', '', '| host | instance | seen h |', '|---|---|---:|');
  for (const u of rec.unbilled) out.push(`| ${cell(u.host)} | ${cell(u.instance ?? '')} | ${h2(u.seen_hours)} |`);
  if (rec.errors.length > 0) {
    out.push('', '### Bill rows refused', '');
    for (const e of rec.errors) out.push(`- line ${e.line}: ${cell(e.message)}`);
  }
  return out;
}

/** A spreadsheet cell: quoted when it holds a comma, a quote or a newline; a leading formula character is defused. */
function csvCell(value: string | number): string {
  let v = String(value);
  if (/^[=+\-@\t\r]/.test(v) && typeof value === 'string') v = `'${v}`;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

function csv(r: UsageReport, rec: Reconciliation | undefined): string {
  const rows: (string | number)[][] = [
    [
      r.by,
      'gpus',
      'up_hours',
      'busy_hours',
      'idle_hours',
      'broken_hours',
      'maintenance_hours',
      'cost',
      'idle_cost',
      'broken_cost',
      'unpriced_hours',
      'currency',
    ],
  ];
  for (const g of [...r.groups, { ...r.total, key: 'total' }]) {
    rows.push([
      g.key,
      g.gpus,
      g.hours.up,
      g.hours.busy,
      g.hours.idle,
      g.hours.broken,
      g.hours.maintenance,
      g.cost,
      g.idle_cost,
      g.broken_cost,
      g.unpriced_hours,
      r.currency,
    ]);
  }
  let text = rows.map((row) => row.map(csvCell).join(',')).join('\n');
  if (rec) {
    const recRows: (string | number)[][] = [
      [
        'kind',
        'instance',
        'host',
        'billed_hours',
        'seen_hours',
        'billed_unseen_hours',
        'billed_cost',
        'billed_broken_hours',
        'broken_cost',
        'billed_maintenance_hours',
        'maintenance_cost',
        'evidence',
      ],
    ];
    for (const i of rec.instances) {
      recRows.push([
        'instance',
        i.instance,
        i.host,
        i.billed_hours,
        i.seen_hours,
        i.billed_unseen_hours,
        i.billed_cost,
        i.billed_broken_hours,
        i.broken_cost,
        i.billed_maintenance_hours,
        i.maintenance_cost,
        [...i.broken_alerts, ...i.maintenance_events].join(' '),
      ]);
    }
    for (const o of rec.orphans) recRows.push(['orphan', o.instance, '', o.billed_hours, 0, o.billed_hours, o.billed_cost, 0, 0, 0, 0, o.bill_rows.join(' ')]);
    for (const u of rec.unbilled) recRows.push(['unbilled', u.instance ?? '', u.host, 0, u.seen_hours, 0, 0, 0, 0, 0, 0, '']);
    text += `\n\n${recRows.map((row) => row.map(csvCell).join(',')).join('\n')}`;
  }
  return `${text}\n`;
}

const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** Hours by state over time as stacked bars: inline SVG, no script, nothing fetched. */
export function usageChart(series: UsageReport['series'], bucket: 'hour' | 'day'): string {
  const width = 960;
  const height = 320;
  const left = 60;
  const bottom = 40;
  const top = 20;
  const plotH = height - bottom - top;
  const plotW = width - left - 20;
  // A loop, not Math.max(...all): a series of a few hundred thousand buckets (a long range by day) would overflow the stack.
  let max = 1;
  for (const s of series) if (s.hours.up > max) max = s.hours.up;
  const barW = series.length > 0 ? plotW / series.length : plotW;
  const bars: string[] = [];
  series.forEach((s, i) => {
    let y = top + plotH;
    for (const state of STATES) {
      const v = s.hours[state as keyof StateHours];
      if (v <= 0) continue;
      const hgt = (v / max) * plotH;
      y -= hgt;
      bars.push(
        `<rect class="bar" data-state="${state}" data-start="${esc(s.start)}" x="${(left + i * barW + barW * 0.1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(barW * 0.8, 0.5).toFixed(1)}" height="${hgt.toFixed(1)}" fill="${COLORS[state]}"><title>${esc(s.start)} ${state}: ${v.toFixed(2)} GPU-hours</title></rect>`,
      );
    }
  });
  const ticks = [0, 0.5, 1].map((f) => {
    const y = top + plotH - f * plotH;
    return `<line x1="${left}" x2="${width - 20}" y1="${y}" y2="${y}" stroke="#ddd"/><text x="${left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${(max * f).toFixed(0)}</text>`;
  });
  const labelEvery = Math.max(1, Math.ceil(series.length / 10));
  const xLabels = series
    .map((s, i) =>
      i % labelEvery === 0
        ? `<text x="${(left + i * barW + barW / 2).toFixed(1)}" y="${height - bottom + 16}" text-anchor="middle" font-size="11">${esc(bucket === 'day' ? s.start.slice(5, 10) : s.start.slice(11, 16))}</text>`
        : '',
    )
    .join('');
  const legend = STATES.map(
    (s, i) =>
      `<rect x="${left + i * 130}" y="${height - 14}" width="12" height="12" fill="${COLORS[s]}"/><text x="${left + i * 130 + 16}" y="${height - 4}" font-size="12">${s}</text>`,
  ).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="GPU-hours by state per ${bucket}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${ticks.join('')}${bars.join('')}${xLabels}${legend}<text x="12" y="${top + plotH / 2}" font-size="12" transform="rotate(-90 12 ${top + plotH / 2})" text-anchor="middle">GPU-hours per ${bucket}</text></svg>`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return `<table><thead><tr>${header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

function html(r: UsageReport, rec: Reconciliation | undefined): string {
  const c = r.currency;
  const groups = table(
    [r.by, 'GPUs', 'up h', 'busy h', 'idle h', 'broken h', 'maintenance h', 'cost', 'idle cost', 'broken cost'],
    [...r.groups, { ...r.total, key: 'total' }].map((g) => [
      g.key,
      String(g.gpus),
      h2(g.hours.up),
      h2(g.hours.busy),
      h2(g.hours.idle),
      h2(g.hours.broken),
      h2(g.hours.maintenance),
      money(g.cost, c),
      money(g.idle_cost, c),
      money(g.broken_cost, c),
    ]),
  );
  const idleHosts = table(
    ['host', 'idle GPU-hours', 'idle cost'],
    r.top_idle_hosts.map((t) => [t.key, h2(t.idle_hours), money(t.idle_cost, c)]),
  );
  const idleJobs = table(
    ['job', 'user', 'idle GPU-hours', 'idle cost'],
    r.top_idle_jobs.map((t) => [t.key, t.user ?? '', h2(t.idle_hours), money(t.idle_cost, c)]),
  );
  const recHtml = rec
    ? `<h2>Bill against what gpualert saw</h2>${table(
        ['instance', 'host', 'billed h', 'seen h', 'billed, unseen h', 'billed cost', 'billed while broken h', 'broken cost', 'in maintenance h', 'evidence'],
        rec.instances.map((i) => [
          i.instance,
          i.host,
          h2(i.billed_hours),
          h2(i.seen_hours),
          h2(i.billed_unseen_hours),
          money(i.billed_cost, c),
          h2(i.billed_broken_hours),
          money(i.broken_cost, c),
          h2(i.billed_maintenance_hours),
          [...i.broken_alerts, ...i.maintenance_events].join(' '),
        ]),
      )}
<h3>The alerts behind the broken hours</h3>${table(
        ['fingerprint', 'host', 'GPU', 'severity', 'from', 'to', 'summary', 'events'],
        rec.alerts.map((a) => [
          a.fingerprint,
          a.host,
          a.gpu === undefined ? '' : String(a.gpu),
          a.severity,
          a.starts_at,
          a.ends_at ?? 'still firing',
          a.summary,
          a.evidence.join(' '),
        ]),
      )}
<h3>Billed, never seen</h3>${table(
        ['instance', 'billed h', 'billed cost'],
        rec.orphans.map((o) => [o.instance, h2(o.billed_hours), money(o.billed_cost, c)]),
      )}
<h3>Seen, never billed</h3>${table(
        ['host', 'instance', 'seen h'],
        rec.unbilled.map((u) => [u.host, u.instance ?? '', h2(u.seen_hours)]),
      )}`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GPU usage ${esc(r.from)} – ${esc(r.to)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}</style>
</head><body>
<h1>GPU usage ${esc(r.from)} – ${esc(r.to)}</h1>
<p>${r.total.gpus} GPUs, ${r.rollups} GPU-hour rollups. Up ${h2(r.total.hours.up)} GPU-hours: busy ${h2(r.total.hours.busy)}, idle ${h2(r.total.hours.idle)}, broken ${h2(r.total.hours.broken)}, maintenance ${h2(r.total.hours.maintenance)}. Idle cost ${money(r.total.idle_cost, c)}, broken cost ${money(r.total.broken_cost, c)}.</p>
${usageChart(r.series, r.bucket)}
<h2>By ${esc(r.by)}</h2>${groups}
<h2>Top idle hosts</h2>${idleHosts}
<h2>Top idle jobs</h2>${idleJobs}
${recHtml}
</body></html>
`;
}
