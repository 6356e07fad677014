// Maintenance windows across the fleet, open ones first, from the fleet snapshot.
import { esc, when } from './dom.js';

export function drawMaintenance(main, snapshot) {
  const now = Date.now();
  const windows = [];
  for (const h of snapshot.hosts) for (const m of h.maintenance) windows.push({ host: h.host, ...m });
  windows.sort((a, b) => Number(b.open) - Number(a.open) || (a.start ?? 0) - (b.start ?? 0));
  main.innerHTML = `<h1>Maintenance windows <span class="muted">${windows.filter((w) => w.open).length} open</span></h1>
${windows.length === 0 ? '<p class="muted">none known</p>' : `<table id="windows"><tr><th>host</th><th></th><th>status</th><th>start</th><th>end</th><th>description</th></tr>${windows.map((w) => `<tr data-open="${w.open}"><td>${esc(w.host)}</td><td>${w.open ? '<b>open</b>' : 'closed'}</td><td>${esc(w.status)}</td><td>${when(w.start, now)}</td><td>${when(w.end, now)}</td><td>${esc(w.description)}</td></tr>`).join('')}</table>`}`;
}
