// One GPU: each metric against its own normal (the band is mean ± k·spread at its current load)
// and its siblings' median, drawn as inline SVG; its alerts, its recent events, its host's facts.
import { esc, gpuHref, num, pill, stateClass, when } from './dom.js';

const METRICS = [
  ['temp_c', 'Temperature', '°C'],
  ['power_w', 'Power', 'W'],
  ['util_pct', 'Utilisation', '%'],
  ['mem_used_mib', 'Memory used', 'MiB'],
];

const W = 600;
const PAD = 24;

/** One metric's strip: the band, its mean, the sibling median and the value as a dot. */
function strip(name, title, unit, m) {
  const band = m.band;
  const low = band ? band.mean - band.k * band.spread : null;
  const high = band ? band.mean + band.k * band.spread : null;
  const points = [m.value, low, high, m.siblings_median].filter((v) => v !== null && Number.isFinite(v));
  if (points.length === 0) return `<div class="metric" data-metric="${name}"><b>${esc(title)}</b> <span class="muted">no data</span></div>`;
  let lo = Math.min(...points);
  let hi = Math.max(...points);
  const pad = (hi - lo) * 0.15 || Math.max(1, Math.abs(hi) * 0.05);
  lo -= pad;
  hi += pad;
  const x = (v) => (PAD + ((v - lo) / (hi - lo)) * (W - 2 * PAD)).toFixed(1);
  const inside = band && m.value !== null ? m.value >= low && m.value <= high : true;
  const parts = [
    `<line class="axis" x1="${PAD}" x2="${W - PAD}" y1="52" y2="52"/>`,
    `<text x="${PAD}" y="63">${esc(num(lo))}</text>`,
    `<text x="${W - PAD}" y="63" text-anchor="end">${esc(num(hi))}</text>`,
  ];
  if (band) {
    parts.push(
      `<rect class="band" data-low="${low}" data-high="${high}" x="${x(low)}" y="12" width="${(x(high) - x(low)).toFixed(1)}" height="30" rx="3"><title>normal: ${esc(num(low))} to ${esc(num(high))} ${esc(unit)}</title></rect>`,
    );
    parts.push(`<line class="mean" x1="${x(band.mean)}" x2="${x(band.mean)}" y1="10" y2="44"/>`);
  }
  if (m.siblings_median !== null)
    parts.push(
      `<line class="sibling" x1="${x(m.siblings_median)}" x2="${x(m.siblings_median)}" y1="6" y2="48"><title>siblings' median ${esc(num(m.siblings_median, unit))}</title></line>`,
    );
  if (m.value !== null)
    parts.push(
      `<circle class="value ${inside ? 'inside' : 'outside'}" cx="${x(m.value)}" cy="27" r="6"><title>now ${esc(num(m.value, unit))}</title></circle>`,
    );
  const normal = band
    ? `normal ${esc(num(band.mean))} ± ${esc(num(band.k))}·${esc(num(band.spread))}${band.load ? ` at ${esc(band.load)}` : ''} (${esc(band.n)} samples)`
    : '<span class="muted">no baseline yet</span>';
  const sib = m.siblings_median !== null ? ` · siblings' median ${esc(num(m.siblings_median, unit))}` : '';
  return `<div class="metric" data-metric="${name}" data-inside="${inside}"><b>${esc(title)}</b> now <b>${esc(num(m.value, unit))}</b>${inside ? '' : ' <span class="error">outside its normal</span>'} · ${normal}${sib}
<svg viewBox="0 0 ${W} 64" preserveAspectRatio="none" role="img" aria-label="${esc(title)} against its baseline band">${parts.join('')}</svg></div>`;
}

export function drawGpu(main, detail) {
  const { host: h, gpu: g } = detail;
  const now = Date.now();
  const memory = g.mem_total_mib ? ` of ${esc(num(g.mem_total_mib, 'MiB'))}` : '';
  const siblings = h.siblings
    .map((s) => `<a class="gpu inline ${stateClass(s.state)}" href="${esc(gpuHref(h.host, s.index))}" title="GPU ${esc(s.index)}: ${esc(s.state)}"></a>`)
    .join(' ');
  const alerts = g.alerts.concat(h.alerts);
  main.innerHTML = `<h1 data-gpu-page="${esc(h.host)}/${esc(g.index)}">${esc(h.host)} · GPU ${esc(g.index)} ${pill(g.state)} <span class="muted">${esc(g.name ?? '')} ${esc(g.uuid ?? '')}</span></h1>
<p>template <b>${esc(h.template || '–')}</b> · last seen ${when(h.last_seen, now)} · siblings ${siblings || '<span class="muted">none</span>'}
 · <a href="#/silences/new/${encodeURIComponent(h.host)}/${encodeURIComponent(g.index)}">silence this GPU…</a></p>
${h.drift.length > 0 ? `<p class="error">drift: ${h.drift.map(esc).join('; ')}</p>` : ''}
${h.maintenance
  .filter((m) => m.open)
  .map((m) => `<p><span class="tag">maint</span> maintenance open: ${esc(m.description)} (${when(m.start, now)} → ${when(m.end, now)})</p>`)
  .join('')}
<h2>Against its own normal</h2>
${METRICS.map(([name, title, unit]) => strip(name, title, unit, g.metrics[name])).join('')}
<p class="muted">memory used${memory}. The band is the GPU's own mean ± k·spread at its current load; the dark tick is its siblings' median.</p>
<h2>Alerts</h2>
${alerts.length === 0 ? '<p class="muted">none firing</p>' : `<table><tr><th>severity</th><th>rule</th><th>summary</th><th>since</th><th>incident</th></tr>${alerts.map((a) => `<tr><td>${pill(a.severity)}</td><td>${esc(a.rule)} <span class="muted">${esc(a.category)}</span></td><td>${esc(a.summary)}</td><td>${when(a.since, now)}</td><td class="mono">${esc(a.incident ?? '')}</td></tr>`).join('')}</table>`}
<h2>Recent events</h2>
${g.events.length === 0 ? '<p class="muted">none</p>' : `<table><tr><th>when</th><th>what</th><th></th></tr>${g.events.map((e) => `<tr><td>${when(e.at, now)}</td><td>${esc(e.kind)}</td><td>${esc(e.summary)}</td></tr>`).join('')}</table>`}`;
}
