// One GPU: each metric's recent history against its own normal (the band is mean ± k × spread at
// each point's load, from the engine's bounded ring), now against it and its siblings' median,
// drawn as inline SVG; its alerts, its recent events, its host's facts.
import { clockNote, esc, gpuHref, num, pill, stateClass, when } from './dom.js';

const METRICS = [
  ['temp_c', 'Temperature', '°C'],
  ['power_w', 'Power', 'W'],
  ['util_pct', 'Utilisation', '%'],
  ['mem_used_mib', 'Memory used', 'MiB'],
];

const W = 600;
const H = 96;
const PAD = 52;
/** A GPU whose host reported this much later than the GPU's last sample is missing from its samples. */
const MISSING_AFTER_MS = 60_000;

const finite = (v) => v !== null && v !== undefined && Number.isFinite(v);

/** The band in words: which number is the mean, which the multiplier, which the spread, and what it comes to. */
function normalInWords(band, unit) {
  if (!band) return null;
  const low = band.mean - band.k * band.spread;
  const high = band.mean + band.k * band.spread;
  return `normal ${esc(num(low))}–${esc(num(high, unit))}: mean ${esc(num(band.mean, unit))} ± ${esc(num(band.k))} × spread ${esc(num(band.spread, unit))}${band.load ? `, at ${esc(band.load)}` : ''}, learned from ${esc(band.n)} samples`;
}

/** Runs of consecutive points where `ok(i)` holds: lines and bands break at a gap rather than bridge it. */
function runs(length, ok) {
  const out = [];
  let run = [];
  for (let i = 0; i < length; i += 1) {
    if (ok(i)) run.push(i);
    else if (run.length > 0) {
      out.push(run);
      run = [];
    }
  }
  if (run.length > 0) out.push(run);
  return out;
}

/**
 * One metric's panel: its history as a line over its band (shaded), the latest value as a dot
 * against the band it is judged by now, the siblings' median as a tick on the right edge.
 */
function strip(name, title, unit, m, series, at, end, missingSince, now) {
  const band = m.band;
  const low = band ? band.mean - band.k * band.spread : null;
  const high = band ? band.mean + band.k * band.spread : null;
  const values = series ? series.values : [];
  const lows = series ? series.low : [];
  const highs = series ? series.high : [];
  const all = [m.value, low, high, m.siblings_median, ...values, ...lows, ...highs].filter(finite);
  if (all.length === 0) return `<div class="metric" data-metric="${name}"><b>${esc(title)}</b> <span class="muted">no data</span></div>`;
  let lo = Math.min(...all);
  let hi = Math.max(...all);
  const pad = (hi - lo) * 0.12 || Math.max(1, Math.abs(hi) * 0.05);
  lo -= pad;
  hi += pad;
  if (name === 'util_pct') [lo, hi] = [Math.max(lo, -2), Math.min(hi, 102)];
  const y = (v) => (H - 16 - ((v - lo) / (hi - lo)) * (H - 24)).toFixed(1);
  const t0 = at.length > 0 ? at[0] : now;
  // To the host's latest sample: a GPU that stopped reporting shows the gap since.
  const t1 = Math.max(at.length > 0 ? at[at.length - 1] : now, finite(end) ? end : 0, t0 + 1);
  const xt = (t) => (PAD + ((t - t0) / (t1 - t0)) * (W - 2 * PAD - 20)).toFixed(1);
  const xNow = (W - PAD).toFixed(1);
  const parts = [
    `<line class="axis" x1="${PAD}" x2="${W - PAD}" y1="${H - 16}" y2="${H - 16}"/>`,
    `<text x="${PAD - 4}" y="${y(hi - pad)}" text-anchor="end">${esc(num(hi - pad))}</text>`,
    `<text x="${PAD - 4}" y="${y(lo + pad)}" text-anchor="end">${esc(num(lo + pad))}</text>`,
  ];
  if (at.length > 0) {
    parts.push(`<text x="${PAD}" y="${H - 3}">${esc(new Date(t0).toISOString().slice(11, 16))}</text>`);
    parts.push(`<text x="${xt(t1)}" y="${H - 3}" text-anchor="end">${esc(new Date(t1).toISOString().slice(11, 16))} UTC</text>`);
  }
  // The band over the history: one polygon per run of points that have one.
  for (const run of runs(at.length, (i) => finite(lows[i]) && finite(highs[i]))) {
    const top = run.map((i) => `${xt(at[i])},${y(highs[i])}`);
    const bottom = run
      .slice()
      .reverse()
      .map((i) => `${xt(at[i])},${y(lows[i])}`);
    parts.push(`<polygon class="band" points="${top.concat(bottom).join(' ')}"/>`);
  }
  let outside = 0;
  for (let i = 0; i < values.length; i += 1) if (finite(values[i]) && finite(lows[i]) && (values[i] < lows[i] || values[i] > highs[i])) outside += 1;
  for (const run of runs(at.length, (i) => finite(values[i]))) {
    if (run.length === 1) parts.push(`<circle class="history" cx="${xt(at[run[0]])}" cy="${y(values[run[0]])}" r="1.8"/>`);
    else parts.push(`<polyline class="history" points="${run.map((i) => `${xt(at[i])},${y(values[i])}`).join(' ')}"/>`);
  }
  // Now: the band it is judged by at its current load, its value, its siblings' median.
  if (band)
    parts.push(
      `<rect class="band now" data-low="${low}" data-high="${high}" x="${(W - PAD - 8).toFixed(1)}" y="${y(high)}" width="16" height="${Math.max(1, y(low) - y(high)).toFixed(1)}"><title>normal now: ${esc(num(low))} to ${esc(num(high, unit))}</title></rect>`,
    );
  if (finite(m.siblings_median))
    parts.push(
      `<line class="sibling" x1="${W - PAD - 12}" x2="${W - PAD + 12}" y1="${y(m.siblings_median)}" y2="${y(m.siblings_median)}"><title>siblings' median ${esc(num(m.siblings_median, unit))}</title></line>`,
    );
  const inside = band && finite(m.value) ? m.value >= low && m.value <= high : true;
  if (finite(m.value))
    parts.push(
      `<circle class="value ${inside ? 'inside' : 'outside'}" cx="${xNow}" cy="${y(m.value)}" r="5"><title>now ${esc(num(m.value, unit))}</title></circle>`,
    );
  const normal = normalInWords(band, unit) ?? '<span class="muted">no baseline for this metric</span>';
  const sib = finite(m.siblings_median) ? ` · siblings' median ${esc(num(m.siblings_median, unit))}` : '';
  const nowText = finite(m.value)
    ? `now <b>${esc(num(m.value, unit))}</b>${inside ? '' : ' <span class="error">outside its normal</span>'}`
    : missingSince !== null
      ? `<span class="error">no value since ${when(missingSince, now)}</span>`
      : '<span class="muted">no value in the last sample</span>';
  const history =
    at.length > 0
      ? ` · ${outside} of ${values.filter(finite).length} recent points outside their band`
      : ' · <span class="muted">no history from the engine</span>';
  return `<div class="metric" data-metric="${name}" data-inside="${inside}" data-points="${values.filter(finite).length}" data-outside="${outside}"><b>${esc(title)}</b> ${nowText} · ${normal}${sib}${history}
<svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="${esc(title)}: its recent history against its baseline band">${parts.join('')}</svg></div>`;
}

/** When a GPU went missing from its host's samples (fallen off the bus), or null while it is in them. */
function missingSince(h, g) {
  if (!finite(g.seen) || !finite(h.last_seen)) return null;
  return h.last_seen - g.seen > MISSING_AFTER_MS ? g.seen : null;
}

export function drawGpu(main, detail) {
  const { host: h, gpu: g, history } = detail;
  // A recording is shown in its own clock: "how long ago" counts from its latest event, not from today.
  const now = detail.data_at ?? Date.now();
  const memory = g.mem_total_mib ? ` of ${esc(num(g.mem_total_mib, 'MiB'))}` : '';
  const siblings = h.siblings
    .map((s) => `<a class="gpu inline ${stateClass(s.state)}" href="${esc(gpuHref(h.host, s.index))}" title="GPU ${esc(s.index)}: ${esc(s.state)}"></a>`)
    .join(' ');
  const alerts = g.alerts.concat(h.alerts);
  const missing = missingSince(h, g);
  const offBus =
    alerts.some((a) => a.category === 'fallen_off_bus' || /fallen off the bus/i.test(a.summary)) || g.events.some((e) => /fallen off the bus/i.test(e.summary));
  const lost =
    missing === null
      ? ''
      : `<p class="error" data-missing="${missing}"><b>${offBus ? 'Fallen off the bus' : 'Missing'}:</b> this GPU has been missing from its host's samples since ${when(missing, now)}; its host still reported at ${when(h.last_seen, now)}. The charts show it up to then.</p>`;
  const at = history ? history.at : [];
  main.innerHTML = `<h1 data-gpu-page="${esc(h.host)}/${esc(g.index)}">${esc(h.host)} · GPU ${esc(g.index)} ${pill(g.state)} <span class="muted">${esc(g.name ?? '')} ${esc(g.uuid ?? '')}</span></h1>
${clockNote(detail.data_at)}
<p>template <b>${esc(h.template || '–')}</b> · last seen ${when(h.last_seen, now)} · siblings ${siblings || '<span class="muted">none</span>'}
 · <a href="#/silences/new/${encodeURIComponent(h.host)}/${encodeURIComponent(g.index)}">silence this GPU…</a></p>
${lost}
${h.drift.length > 0 ? `<p class="error">drift: ${h.drift.map(esc).join('; ')}</p>` : ''}
${h.maintenance
  .filter((m) => m.open)
  .map((m) => `<p><span class="tag">maint</span> maintenance open: ${esc(m.description)} (${when(m.start, now)} → ${when(m.end, now)})</p>`)
  .join('')}
<h2>Against its own normal${at.length > 0 ? ` <span class="muted">(the last ${esc(Math.round((Math.max(at[at.length - 1], h.last_seen ?? 0) - at[0]) / 60_000))} min)</span>` : ''}</h2>
${METRICS.map(([name, title, unit]) => strip(name, title, unit, g.metrics[name], history ? history.metrics[name] : null, at, h.last_seen, missing, now)).join('')}
<p class="muted">memory used${memory}. The line is the GPU's recent values (one point per ${esc(history ? Math.round(history.step_ms / 1000) : 15)} s); the shaded band its normal at each point's load: its own mean ± k × its spread (k the rule's sigmas). On the right, now: the dot, the band it is judged by, and the dark tick its siblings' median.</p>
<h2>Alerts</h2>
${alerts.length === 0 ? '<p class="muted">none firing</p>' : `<table><tr><th>severity</th><th>rule</th><th>summary</th><th>since</th><th>incident</th></tr>${alerts.map((a) => `<tr><td>${pill(a.severity)}</td><td>${esc(a.rule)} <span class="muted">${esc(a.category)}</span></td><td>${esc(a.summary)}</td><td>${when(a.since, now)}</td><td class="mono">${esc(a.incident ?? '')}</td></tr>`).join('')}</table>`}
<h2>Recent events</h2>
${g.events.length === 0 ? '<p class="muted">none</p>' : `<table><tr><th>when</th><th>what</th><th></th></tr>${g.events.map((e) => `<tr data-event-kind="${esc(e.kind)}"><td>${when(e.at, now)}</td><td>${esc(e.kind === 'kernel' ? 'kernel event' : e.kind)}</td><td>${esc(e.summary)}</td></tr>`).join('')}</table>`}`;
}
