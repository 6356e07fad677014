// Silences through the notifier's own `/v1/silences` API: the page sends what `gpualert silence
// add` would, and the server's validation answers (its message is shown as it is).
import { call } from './api.js';
import { esc, when } from './dom.js';

const UNITS = { s: 1, m: 60, h: 3600, d: 86400 };
/** Alerts the preview names; the count is of all of them. */
const PREVIEW_LISTED = 20;
/** Typing settles this long before the preview asks again. */
const PREVIEW_DELAY_MS = 250;
/** Why this server cannot preview (it runs without a notifier), once it said so. */
let noAlertList = '';

/** Whom a silence holds alerts back from: every receiver, or only those it names (a maintenance window's: the pager). */
export function scopeOf(s) {
  return Array.isArray(s.receivers) && s.receivers.length > 0 ? `only ${s.receivers.join(', ')}` : 'every receiver';
}

/**
 * What the matchers would silence now: the firing alerts `/v1/alerts?filter=` selects with the
 * same lines (the notifier parses them as the silence's own), counted and the first few named.
 */
async function preview(lines, out) {
  if (noAlertList) {
    out.innerHTML = `<span class="muted">${esc(noAlertList)}</span>`;
    return;
  }
  if (lines.length === 0) {
    out.innerHTML = '<span class="muted">matchers select the alerts it would silence</span>';
    delete out.dataset.count;
    return;
  }
  const q = new URLSearchParams();
  for (const line of lines) q.append('filter', line);
  try {
    const { alerts, omitted } = await call('GET', `/v1/alerts?${q}`);
    const count = alerts.length + omitted;
    out.dataset.count = String(count);
    const listed = alerts
      .slice(0, PREVIEW_LISTED)
      .map(
        (a) =>
          `<li data-fingerprint="${esc(a.fingerprint)}">${esc(a.labels.host ?? a.labels.instance ?? '')}${a.labels.gpu !== undefined ? ` GPU ${esc(a.labels.gpu)}` : ''} <span class="muted">${esc(a.labels.rule ?? a.labels.alertname ?? '')}</span> ${esc(a.summary)}${a.silencedBy.length > 0 ? ' <span class="muted">(already silenced)</span>' : ''}</li>`,
      )
      .join('');
    out.innerHTML = `<b id="s-preview-count">would silence ${count} firing alert${count === 1 ? '' : 's'}</b>${listed ? `<ul id="s-preview-list">${listed}</ul>` : ''}${count > PREVIEW_LISTED ? `<span class="muted">and ${count - PREVIEW_LISTED} more</span>` : ''}`;
  } catch (error) {
    delete out.dataset.count;
    // A server without a notifier (an API-only one) has no alert list: said once, not asked again.
    if (/^503: /.test(error.message)) noAlertList = `no preview: ${error.message.replace(/^503: /, '')}`;
    out.innerHTML = `<span class="${noAlertList ? 'muted' : 'error'}">${esc(noAlertList || error.message)}</span>`;
  }
}

/** `90m`, `2h`, `1d`, `3600` (seconds) → seconds; NaN otherwise (the API words the refusal). */
export function seconds(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/.exec(text);
  return m ? Number(m[1]) * UNITS[m[2] || 's'] : NaN;
}

function stateOf(s, now) {
  if (s.expiredAt !== undefined || s.endsAt <= now) return 'expired';
  return s.startsAt > now ? 'pending' : 'active';
}

/** Draws the list and the form; `prefill` is the matchers the form starts with (one a line). */
export async function drawSilences(main, prefill, redraw) {
  const { silences } = await call('GET', '/v1/silences');
  const now = Date.now();
  silences.sort((a, b) => (stateOf(a, now) === 'expired') - (stateOf(b, now) === 'expired') || b.startsAt - a.startsAt);
  const rows = silences
    .map((s) => {
      const state = stateOf(s, now);
      return `<tr data-silence="${esc(s.id)}" data-state="${state}"><td class="mono">${esc(s.id)}</td><td>${state}</td><td class="mono">${s.matchers.map(esc).join('<br>')}</td>
<td>${when(s.startsAt, now)} →<br>${when(s.endsAt, now)}</td><td class="scope">${esc(scopeOf(s))}</td><td>${esc(s.createdBy)}</td><td>${esc(s.comment)}</td>
<td>${state === 'expired' ? '' : `<button type="button" data-expire="${esc(s.id)}">Expire</button>`}</td></tr>`;
    })
    .join('');
  main.innerHTML = `<h1>Silences</h1>
<form class="silence" id="silence-form">
<label for="s-matchers">matchers</label><textarea id="s-matchers" rows="3" placeholder='host="gpu-node-002"&#10;gpu="3"'>${esc(prefill)}</textarea>
<label for="s-for">for</label><input id="s-for" value="2h" placeholder="90m, 2h, 1d">
<label for="s-by">created by</label><input id="s-by" value="${esc(sessionStorage.getItem('gpualert.author') ?? '')}">
<label for="s-comment">comment</label><input id="s-comment" placeholder="why: a ticket, a window">
<label for="s-force">force</label><span class="check"><input type="checkbox" id="s-force"><span>even if it matches more than half of what is firing, on more than one host</span></span>
<span>preview</span><div id="s-preview" aria-live="polite"></div>
<span></span><div><button type="submit">Create silence</button> <span id="s-result" role="status"></span></div>
</form>
<h2>All silences</h2>
${rows ? `<table id="silences"><tr><th>id</th><th>state</th><th>matchers</th><th>from → until</th><th>holds back from</th><th>by</th><th>comment</th><th></th></tr>${rows}</table>` : '<p class="muted">none</p>'}`;
  const result = main.querySelector('#s-result');
  const matchersOf = () =>
    main
      .querySelector('#s-matchers')
      .value.split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
  const shown = main.querySelector('#s-preview');
  let pending;
  let asked = 0;
  const look = async () => {
    const mine = ++asked;
    const out = document.createElement('div');
    await preview(matchersOf(), out);
    if (mine !== asked) return; // only the latest question's answer is drawn
    shown.replaceChildren(...out.childNodes);
    if (out.dataset.count === undefined) delete shown.dataset.count;
    else shown.dataset.count = out.dataset.count;
  };
  main.querySelector('#s-matchers').addEventListener('input', () => {
    clearTimeout(pending);
    pending = setTimeout(look, PREVIEW_DELAY_MS);
  });
  await look();
  main.querySelector('#silence-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const author = main.querySelector('#s-by').value;
    sessionStorage.setItem('gpualert.author', author);
    const body = {
      matchers: matchersOf(),
      duration_seconds: seconds(main.querySelector('#s-for').value),
      created_by: author,
      comment: main.querySelector('#s-comment').value,
      ...(main.querySelector('#s-force').checked ? { force: true } : {}),
    };
    if (!Number.isFinite(body.duration_seconds)) {
      result.className = 'error';
      result.textContent = 'for: a duration such as 90m, 2h or 1d';
      return;
    }
    call('POST', '/v1/silences', body)
      .then((s) => {
        result.className = '';
        result.dataset.created = s.id;
        const reach = s.reach
          ? `: matches ${s.reach.matched} of ${s.reach.firing} firing alerts on ${s.reach.hosts} host${s.reach.hosts === 1 ? '' : 's'}`
          : '';
        return redraw(`created ${s.id}${reach}`);
      })
      .catch((error) => {
        result.className = 'error';
        result.textContent = error.message;
      });
  });
  for (const button of main.querySelectorAll('button[data-expire]')) {
    button.addEventListener('click', () => {
      call('DELETE', `/v1/silences/${encodeURIComponent(button.dataset.expire)}`)
        .then(() => redraw(`expired ${button.dataset.expire}`))
        .catch((error) => {
          result.className = 'error';
          result.textContent = error.message;
        });
    });
  }
}
