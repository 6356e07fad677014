// Maintenance windows across the fleet, open ones first, from the fleet snapshot; beside each, the
// silence the notifier made for it (`maintenance-…`, by gpualert): when it holds and whom it holds back from.
import { esc, when } from './dom.js';
import { scopeOf } from './silences-page.js';

function stateOf(s, now) {
  if (s.expiredAt !== undefined || s.endsAt <= now) return 'expired';
  return s.startsAt > now ? 'pending' : 'active';
}

/** The host a maintenance silence is for: its one `host="…"` matcher, unescaped. */
function hostOf(s) {
  const m = s.matchers.length === 1 ? /^host="((?:[^"\\]|\\.)*)"$/.exec(s.matchers[0]) : null;
  return m ? m[1].replace(/\\(.)/g, '$1') : null;
}

/** The window's silence: the host's maintenance silence whose hours cover the window's start (or any of the host's, when the window gave no start). */
function silenceFor(w, silences) {
  const mine = silences.filter((s) => s.host === w.host);
  return mine.find((s) => w.start !== null && w.start !== undefined && s.startsAt <= w.start && w.start <= s.endsAt) ?? (w.start == null ? mine[0] : undefined);
}

function held(s, now) {
  if (!s) return '<span class="muted">none</span>';
  return `<span class="mono">${esc(s.id)}</span> ${esc(stateOf(s, now))}<br>${when(s.startsAt, now)} →<br>${when(s.endsAt, now)}<br><span class="scope">${esc(scopeOf(s))}</span>`;
}

export function drawMaintenance(main, snapshot, silences = []) {
  const now = Date.now();
  const own = silences.filter((s) => s.createdBy === 'gpualert' && s.id.startsWith('maintenance-')).map((s) => ({ ...s, host: hostOf(s) }));
  const windows = [];
  for (const h of snapshot.hosts) for (const m of h.maintenance) windows.push({ host: h.host, ...m });
  windows.sort((a, b) => Number(b.open) - Number(a.open) || (a.start ?? 0) - (b.start ?? 0));
  main.innerHTML = `<h1>Maintenance windows <span class="muted">${windows.filter((w) => w.open).length} open</span></h1>
<p class="muted">During a window the notifier holds the host's alerts back from the pager receivers only (chat still hears), from 15 minutes before the window's start to 15 minutes after its end.</p>
${
  windows.length === 0
    ? '<p class="muted">none known</p>'
    : `<table id="windows"><tr><th>host</th><th></th><th>status</th><th>start</th><th>end</th><th>description</th><th>pager silence</th></tr>${windows
        .map(
          (w) =>
            `<tr data-open="${w.open}"><td>${esc(w.host)}</td><td>${w.open ? '<b>open</b>' : 'closed'}</td><td>${esc(w.status)}</td><td>${when(w.start, now)}</td><td>${when(w.end, now)}</td><td>${esc(w.description)}</td><td class="held">${held(silenceFor(w, own), now)}</td></tr>`,
        )
        .join('')}</table>`
}`;
}
