// Small helpers every page uses. Every string from the server (hosts, labels, summaries) is
// outside data: it reaches the page only through esc() or textContent, never as markup.

const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for markup and attribute values. */
export function esc(value) {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

export const STATES = ['ok', 'info', 'warning', 'error', 'critical'];

export function stateRank(state) {
  const rank = STATES.indexOf(state);
  return rank < 0 ? 0 : rank;
}

/** A state as a known class name: an unknown value shows as ok-less grey, never as a class the server chose. */
export function stateClass(state) {
  return STATES.includes(state) ? `s-${state}` : 's-ok';
}

export function pill(state) {
  return `<span class="pill ${stateClass(state)}">${esc(state)}</span>`;
}

/** An epoch-ms time as a short UTC stamp and how long ago. */
export function when(ms, now = Date.now()) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '<span class="muted">never</span>';
  return `<span title="${esc(new Date(ms).toISOString())}">${esc(new Date(ms).toISOString().replace('T', ' ').slice(0, 19))} (${esc(ago(now - ms))})</span>`;
}

/** Said above a page whose data is a recording (the engine's event clock): its times are the recording's, and so is "ago". */
export function clockNote(dataAt) {
  if (dataAt === null || dataAt === undefined || !Number.isFinite(dataAt)) return '';
  return `<p class="muted" data-clock="recording">The data is a recording: times are its own, and "ago" counts from its latest event, ${esc(new Date(dataAt).toISOString().replace('T', ' ').slice(0, 19))} UTC.</p>`;
}

export function ago(ms) {
  if (ms < 0) return `in ${ago(-ms)}`.replace(' ago', '');
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** A number shown to a sensible precision. */
export function num(v, unit = '') {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const text = Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  return unit ? `${text} ${unit}` : text;
}

/** The part of the location hash after `#/`, split on `/` and decoded; a part that does not decode is left out. */
export function route() {
  return location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return '';
      }
    });
}

export function gpuHref(host, index) {
  return `#/gpu/${encodeURIComponent(host)}/${encodeURIComponent(index)}`;
}
