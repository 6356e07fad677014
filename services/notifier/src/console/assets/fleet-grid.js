// The fleet grid: one tile per host, one square per GPU coloured by its state (its worst firing
// severity, or ok). Drawn as one string of escaped markup: 8,000 GPUs take one parse and one layout.
import { clockNote, esc, gpuHref, STATES, stateClass, stateRank, when } from './dom.js';

const filters = { text: '', problems: false };

function hostTile(h, now) {
  const open = h.maintenance.some((m) => m.open);
  const cells = h.gpus
    .map(
      (g) =>
        `<a class="gpu ${stateClass(g.state)}" href="${esc(gpuHref(h.host, g.index))}" data-host="${esc(h.host)}" data-gpu="${esc(g.index)}" data-state="${esc(g.state)}" title="${esc(`${h.host} GPU ${g.index}: ${g.state}`)}"></a>`,
    )
    .join('');
  const hostAlerts =
    h.alerts.length > 0
      ? ` <span class="pill ${stateClass(h.state)}" title="${esc(h.alerts.map((a) => a.summary).join('\n'))}">${h.alerts.length} host alert${h.alerts.length > 1 ? 's' : ''}</span>`
      : '';
  const seen = h.last_seen === null ? 'never seen' : `seen ${when(h.last_seen, now).replace(/<[^>]+>/g, '')}`;
  return `<div class="host${open ? ' maint' : ''}" data-host="${esc(h.host)}" data-state="${esc(h.state)}" title="${esc(`${h.host} · ${h.template} · ${seen}${open ? ' · maintenance open' : ''}`)}"><span class="name">${esc(h.host)}${open ? ' <span class="tag">maint</span>' : ''}${h.drift.length > 0 ? ' <span class="tag">drift</span>' : ''}${hostAlerts}</span><div class="cells">${cells}</div></div>`;
}

/** Draws the grid into `main`; the filters survive a refresh. */
export function drawFleet(main, snapshot) {
  // A recording is shown in its own clock: "how long ago" counts from its latest event, not from today.
  const now = snapshot.data_at ?? Date.now();
  const counts = new Map(STATES.map((s) => [s, 0]));
  for (const h of snapshot.hosts) for (const g of h.gpus) counts.set(g.state, (counts.get(g.state) ?? 0) + 1);
  const wanted = snapshot.hosts.filter((h) => (!filters.problems || h.state !== 'ok') && (filters.text === '' || h.host.includes(filters.text)));
  wanted.sort((a, b) => stateRank(b.state) - stateRank(a.state) || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  const legend = STATES.map((s) => `<span><i class="swatch ${stateClass(s)}"></i>${esc(s)} <b data-count="${s}">${counts.get(s)}</b></span>`).join('');
  const gpus = snapshot.hosts.reduce((n, h) => n + h.gpus.length, 0);
  const omitted = snapshot.omitted_hosts > 0 ? ` <span class="error">${snapshot.omitted_hosts} more hosts left out</span>` : '';
  const unavailable = (snapshot.unavailable ?? [])
    .map((u) => `<p class="error" data-unavailable>engine did not answer, its hosts are missing: ${esc(u)}</p>`)
    .join('');
  main.innerHTML = `<h1>Fleet <span class="muted">${snapshot.hosts.length} hosts, ${gpus} GPUs, from ${esc(snapshot.source)} at ${when(snapshot.at, Date.now())}</span>${omitted}</h1>
${clockNote(snapshot.data_at)}${unavailable}
<div class="toolbar"><input id="fleet-filter" type="search" placeholder="host contains…" value="${esc(filters.text)}">
<label><input id="fleet-problems" type="checkbox"${filters.problems ? ' checked' : ''}> only hosts with alerts</label>
<span class="counts">${legend}</span></div>
<div class="grid" id="grid">${wanted.map((h) => hostTile(h, now)).join('')}</div>
${
  snapshot.events.length > 0
    ? `<h2>Recent events</h2><table><tr><th>when</th><th>host</th><th>GPU</th><th>what</th><th></th></tr>${snapshot.events
        .slice(0, 50)
        .map(
          (e) =>
            `<tr><td>${when(e.at, now)}</td><td>${esc(e.host)}</td><td>${e.gpu === null ? '' : `<a href="${esc(gpuHref(e.host, e.gpu))}">${esc(e.gpu)}</a>`}</td><td>${esc(e.kind)}</td><td>${esc(e.summary)}</td></tr>`,
        )
        .join('')}</table>`
    : ''
}`;
  const text = main.querySelector('#fleet-filter');
  text.addEventListener('change', () => {
    filters.text = text.value;
    drawFleet(main, snapshot);
  });
  const problems = main.querySelector('#fleet-problems');
  problems.addEventListener('change', () => {
    filters.problems = problems.checked;
    drawFleet(main, snapshot);
  });
}
