import type { BaselineBand } from './postmortem.ts';
import { baselineBands } from './postmortem.ts';
import type { MinuteSummary, SummarisedMetric, Timeline, TimelineEntry } from './timeline.ts';

export type Gpu = { readonly host: string; readonly gpu: number };

const RANK: Readonly<Record<string, number>> = { critical: 4, error: 3, warning: 2, info: 1 };
/** The most GPUs one export charts: past six, a reader looks at the table. */
export const MAX_CHARTED_GPUS = 6;

export const PANELS: readonly { metric: SummarisedMetric; label: string; color: string }[] = [
  { metric: 'temp_c', label: 'temperature °C', color: '#d9480f' },
  { metric: 'power_w', label: 'power W', color: '#1971c2' },
  { metric: 'util_pct', label: 'utilisation %', color: '#2f9e44' },
  { metric: 'mem_temp_c', label: 'memory temperature °C', color: '#9c36b5' },
];

/** What the chart marks, and how: a person reads the colour from the legend above it. */
export const MARKS = {
  kernel: { color: '#c92a2a', label: 'kernel event', dash: '' },
  alert: { color: '#e67700', label: 'alert', dash: '' },
  page: { color: '#5f3dc4', label: 'notification delivered', dash: '' },
  failed: { color: '#5f3dc4', label: 'delivery failed', dash: '2,3' },
  acknowledgement: { color: '#087f5b', label: 'acknowledged', dash: '6,3' },
  provider: { color: '#0b7285', label: 'provider notice', dash: '' },
} as const;
type MarkKind = keyof typeof MARKS;

/**
 * The GPUs the chart draws: the incident's own first (the root alert's GPU, then its other GPUs),
 * then every GPU the range's alerts and kernel events name, the most severe and the earliest
 * first; with none of those, the first GPU with samples (a quiet range). Never a healthy GPU picked
 * for being first in the list while others were failing.
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
  const own: Gpu[] = t.incident?.gpus?.length ? t.incident.gpus : t.incident?.gpu !== undefined ? [{ host: t.incident.host, gpu: t.incident.gpu }] : [];
  const chosen = [...own, ...ranked.filter((g) => !own.some((o) => o.host === g.host && o.gpu === g.gpu))];
  if (chosen.length === 0 && t.metrics[0]) chosen.push({ host: t.metrics[0].host, gpu: t.metrics[0].gpu });
  return chosen.slice(0, limit);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** The bands a chart draws: the post-mortem's for an incident, else each GPU's from before its first event (or the whole range). */
export function bandsFor(t: Timeline, gpus: readonly Gpu[]): BaselineBand[] {
  if (t.postmortem) return t.postmortem.bands;
  return gpus.flatMap((g) => {
    const first = t.entries.find((e) => e.host === g.host && e.gpu === g.gpu && (e.source === 'alert' || e.source === 'kernel'));
    return baselineBands(t.metrics, [g], first ? Date.parse(first.ts) : Date.parse(t.to));
  });
}

/** A marker on one GPU's chart: when, what kind, and its hover text. */
interface Mark {
  readonly at: number;
  readonly kind: MarkKind;
  readonly text: string;
}

/** The events a GPU's chart marks: its own and its host's kernel events and alerts, the notifications and acknowledgements of its alerts, its host's provider notices. */
export function marksFor(t: Timeline, g: Gpu): Mark[] {
  const mine = (e: TimelineEntry) => e.host === g.host && (e.gpu === undefined || e.gpu === g.gpu);
  const fingerprints = new Set(t.entries.filter((e) => e.source === 'alert' && mine(e) && e.fingerprint).map((e) => e.fingerprint ?? ''));
  const marks: Mark[] = [];
  for (const e of t.entries) {
    const at = Date.parse(e.ts);
    if ((e.source === 'kernel' || e.source === 'alert' || e.source === 'provider') && mine(e)) marks.push({ at, kind: e.source, text: `${e.ts} ${e.title}` });
    if (e.source === 'acknowledgement' && fingerprints.has(e.fingerprint ?? '')) marks.push({ at, kind: 'acknowledgement', text: `${e.ts} ${e.title}` });
  }
  for (const n of t.notifications) {
    if (n.outcome === 'suppressed' || !n.fingerprints.some((f) => fingerprints.has(f))) continue;
    marks.push({
      at: Date.parse(n.ts),
      kind: n.outcome === 'sent' ? 'page' : 'failed',
      text: `${n.ts} ${n.outcome} → ${n.receiver} (${n.channel}), attempt ${n.attempt}`,
    });
  }
  return marks;
}

const hhmm = (at: number) => new Date(at).toISOString().slice(11, 16);

/**
 * One GPU's chart: temperature, power, utilisation and memory temperature per minute, one panel
 * each on its own scale, each against the GPU's baseline band (shaded, its mean dashed), with the
 * GPU's events marked across all four. Plain SVG: no script, prints as drawn.
 */
export function gpuChart(t: Timeline, g: Gpu, bands: readonly BaselineBand[], width = 960): string {
  const from = Date.parse(t.from);
  const to = Date.parse(t.to);
  const left = 64;
  const right = 16;
  const top = 34;
  const panelH = 92;
  const gap = 16;
  const height = top + PANELS.length * (panelH + gap) + 14;
  const x = (at: number) => left + ((at - from) / Math.max(1, to - from)) * (width - left - right);
  const rows = (metric: SummarisedMetric) => t.metrics.filter((m) => m.host === g.host && m.gpu === g.gpu && m.metric === metric);
  let lx = left + 210;
  const legend = (Object.keys(MARKS) as MarkKind[])
    .map((k) => {
      const at = lx;
      lx += 30 + MARKS[k].label.length * 6;
      return `<line x1="${at}" y1="22" x2="${at + 14}" y2="22" stroke="${MARKS[k].color}" stroke-width="2" stroke-dasharray="${MARKS[k].dash}"/><text x="${at + 18}" y="26" font-size="11">${MARKS[k].label}</text>`;
    })
    .join('');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="sans-serif" role="img" aria-label="${escapeHtml(`${g.host} GPU ${g.gpu}: temperature, power, utilisation and memory temperature against its baseline band`)}">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="14" font-size="13" font-weight="bold">${escapeHtml(g.host)} GPU ${g.gpu}</text>`,
    `<text x="${left}" y="27" font-size="11" fill="#495057">per-minute mean; band: its normal</text>`,
    legend,
  ];
  let lastSample = -Infinity;
  PANELS.forEach(({ metric, label, color }, i) => {
    const y0 = top + i * (panelH + gap);
    const data = rows(metric);
    const band = bands.find((b) => b.host === g.host && b.gpu === g.gpu && b.metric === metric);
    const values = [...data.flatMap((m) => [m.mean]), ...(band ? [band.low, band.high] : [])];
    // A loop, not a spread: a long range's points would overflow the call stack as arguments.
    let lo = values.length > 0 ? Infinity : 0;
    let hi = values.length > 0 ? -Infinity : 1;
    for (const v of values) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (hi - lo < 1) [lo, hi] = [lo - 1, hi + 1];
    const pad = (hi - lo) * 0.1;
    lo -= pad;
    hi += pad;
    const y = (v: number) => y0 + panelH - ((v - lo) / (hi - lo)) * panelH;
    parts.push(
      `<g class="panel" data-metric="${metric}">`,
      `<rect x="${left}" y="${y0}" width="${width - left - right}" height="${panelH}" fill="none" stroke="#ced4da"/>`,
      `<text x="${left + 4}" y="${y0 + 12}" font-size="11" fill="${color}">${label}</text>`,
      `<text x="${left - 4}" y="${y0 + 10}" font-size="10" text-anchor="end" fill="#495057">${hi.toFixed(0)}</text>`,
      `<text x="${left - 4}" y="${y0 + panelH}" font-size="10" text-anchor="end" fill="#495057">${lo.toFixed(0)}</text>`,
    );
    if (band) {
      parts.push(
        `<rect class="band" data-metric="${metric}" x="${left}" y="${y(band.high).toFixed(1)}" width="${width - left - right}" height="${Math.max(1, y(band.low) - y(band.high)).toFixed(1)}" fill="${color}" fill-opacity="0.12"><title>${escapeHtml(`normal ${label}: ${band.mean} ± ${band.k} × ${band.spread} (mean ± ${band.k} × spread of ${band.minutes} minutes, ${band.from.slice(11, 16)}–${band.to.slice(11, 16)} UTC), ${band.low}–${band.high}`)}</title></rect>`,
        `<line x1="${left}" x2="${width - right}" y1="${y(band.mean).toFixed(1)}" y2="${y(band.mean).toFixed(1)}" stroke="${color}" stroke-opacity="0.5" stroke-dasharray="4,4"/>`,
        `<text x="${width - right - 4}" y="${y0 + 12}" font-size="10" text-anchor="end" fill="#495057">normal ${band.low}–${band.high}</text>`,
      );
    }
    // A gap of over two minutes (a GPU gone, a collector down) breaks the line rather than bridging it.
    let run: string[] = [];
    let prev = -Infinity;
    const flush = () => {
      if (run.length > 0)
        parts.push(
          `<polyline class="series" data-metric="${metric}" data-host="${escapeHtml(g.host)}" data-gpu="${g.gpu}" fill="none" stroke="${color}" stroke-width="2" points="${run.join(' ')}"/>`,
        );
      run = [];
    };
    for (const m of data) {
      const at = Date.parse(m.minute);
      if (at - prev > 2 * 60_000) flush();
      run.push(`${x(at + 30_000).toFixed(1)},${y(m.mean).toFixed(1)}`);
      prev = at;
      lastSample = Math.max(lastSample, at + 60_000);
    }
    flush();
    parts.push('</g>');
  });
  const bottom = top + PANELS.length * (panelH + gap) - gap;
  if (lastSample === -Infinity) {
    parts.push(
      `<text x="${width / 2}" y="${top + panelH / 2}" text-anchor="middle" font-size="13" fill="#868e96">no samples from this GPU in the range</text>`,
    );
  } else {
    // Gone while its host still reported: the GPU, not the collector or the recording, stopped.
    const hostUntil = Date.parse(t.samplesUntil?.find((s) => s.host === g.host)?.ts ?? '');
    if (Number.isFinite(hostUntil) && lastSample < hostUntil - 2 * 60_000)
      parts.push(
        `<text class="lost" x="${Math.min(x(lastSample) + 4, width - right - 330).toFixed(1)}" y="${top + panelH / 2}" font-size="12" fill="#c92a2a">no samples after ${hhmm(lastSample)} UTC; its host reported until ${hhmm(hostUntil)}</text>`,
      );
  }
  for (let tick = Math.ceil(from / 600_000) * 600_000; tick <= to; tick += 600_000) {
    parts.push(
      `<line x1="${x(tick).toFixed(1)}" x2="${x(tick).toFixed(1)}" y1="${bottom}" y2="${bottom + 4}" stroke="#868e96"/><text x="${x(tick).toFixed(1)}" y="${bottom + 14}" font-size="10" text-anchor="middle" fill="#495057">${hhmm(tick)}</text>`,
    );
  }
  for (const m of marksFor(t, g)) {
    if (m.at < from || m.at > to) continue; // dated outside the chart: in the tables
    const at = x(m.at).toFixed(1);
    const mark = MARKS[m.kind];
    parts.push(
      `<line class="marker" data-source="${m.kind}" x1="${at}" y1="${top}" x2="${at}" y2="${bottom}" stroke="${mark.color}" stroke-width="1.5" stroke-dasharray="${mark.dash || '3,3'}"><title>${escapeHtml(m.text)}</title></line>`,
    );
  }
  parts.push('</svg>');
  return parts.join('');
}

/** The figures of an export: one per charted GPU, with what its bands are in words. */
export function charts(t: Timeline): string {
  const gpus = chartedGpus(t);
  const bands = bandsFor(t, gpus);
  return gpus
    .map((g) => {
      const order = (b: BaselineBand) => PANELS.findIndex((p) => p.metric === b.metric);
      const own = bands.filter((b) => b.host === g.host && b.gpu === g.gpu).sort((a, b) => order(a) - order(b));
      const outside = marksFor(t, g).filter((m) => m.at < Date.parse(t.from) || m.at > Date.parse(t.to)).length;
      const caption = [
        own.length > 0
          ? `Band: the GPU's normal, mean ± ${own[0]?.k ?? 3} × spread of its per-minute means from ${own[0]?.from.slice(11, 16)} to ${own[0]?.to.slice(11, 16)} UTC (before the incident's lead-in): ${own.map((b) => `${PANELS.find((p) => p.metric === b.metric)?.label ?? b.metric} ${b.mean} ± ${b.k} × ${b.spread}`).join('; ')}.`
          : 'No band: too few minutes of samples before the incident.',
        outside > 0 ? `${outside} of its notifications and acknowledgements are dated outside this chart's range (their own clock): see the tables.` : '',
      ]
        .filter(Boolean)
        .join(' ');
      return `<figure data-host="${escapeHtml(g.host)}" data-gpu="${g.gpu}">${gpuChart(t, g, bands)}<figcaption>${escapeHtml(caption)}</figcaption></figure>`;
    })
    .join('\n');
}

export type { MinuteSummary };
