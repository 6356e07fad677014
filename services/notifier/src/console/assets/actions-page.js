// Remediation actions (drain, resume, reset, reboot) from gpualert.actions, those waiting for a
// person first; approve or deny one here as `gpualert action approve|deny ID` would. A chat or
// pager message links to `#/actions/ID`: that action is marked and scrolled to, never decided by
// opening the link.
import { call } from './api.js';
import { esc, gpuHref, when } from './dom.js';

/** An action's state as one of the console's colours: waiting amber, failed or refused red, done green. */
const COLOUR = {
  awaiting_approval: 'warning',
  retrying: 'warning',
  failed: 'critical',
  refused: 'error',
  denied: 'info',
  expired: 'info',
  dry_run: 'info',
};

function pillOf(state) {
  return `<span class="pill s-${COLOUR[state] ?? 'ok'}">${esc(state.replaceAll('_', ' '))}</span>`;
}

function ms(iso) {
  const t = Date.parse(iso ?? '');
  return Number.isFinite(t) ? t : undefined;
}

function row(a, focus, now) {
  // Past its deadline the timeout decides it (the remediator says how at its next tick): no buttons.
  const late = a.state === 'awaiting_approval' && ms(a.approval_deadline) !== undefined && ms(a.approval_deadline) <= now;
  const waiting = a.state === 'awaiting_approval' && !late;
  const where = a.gpu === undefined ? esc(a.host) : `<a href="${gpuHref(a.host, a.gpu)}">${esc(a.host)} GPU ${esc(a.gpu)}</a>`;
  const deadline =
    a.state === 'awaiting_approval' && a.approval_deadline
      ? `<br><span class="muted">${late ? 'deadline passed' : 'until'} ${when(ms(a.approval_deadline), now)}, then ${esc(a.on_timeout ?? 'deny')}</span>`
      : '';
  const said = [
    a.decided_by ? `by ${esc(a.decided_by)}` : '',
    a.comment ? `“${esc(a.comment)}”` : '',
    a.attempt ? `attempt ${esc(a.attempt)}` : '',
    a.error ? `<span class="error">${esc(a.error)}</span>` : '',
  ].filter((s) => s !== '');
  const buttons = waiting
    ? `<button type="button" data-decide="approved" data-id="${esc(a.id)}">Approve</button> <button type="button" data-decide="denied" data-id="${esc(a.id)}">Deny</button>`
    : '';
  return `<tr data-action="${esc(a.id)}" data-state="${esc(a.state)}"${a.id === focus ? ' class="focus" id="focused-action"' : ''}>
<td>${where}</td><td>${esc(a.kind)}</td><td>${pillOf(a.state)}${deadline}</td><td>${when(ms(a.at), now)}</td>
<td>${esc(a.reason)}<br><span class="muted">rule ${esc(a.rule)}${a.partition ? ` · partition ${esc(a.partition)}` : ''} · <span class="mono">${esc(a.id)}</span></span></td>
<td>${said.join('<br>')}</td><td>${buttons}</td></tr>`;
}

/** Draws the list; `focus` is the id a link named (`#/actions/ID`), `redraw(message)` draws again and says what happened. */
export async function drawActions(main, focus, redraw) {
  const data = await call('GET', '/v1/actions');
  const now = Date.now();
  const found = focus === undefined || data.actions.some((a) => a.id === focus);
  main.innerHTML = `<h1>Actions <span class="muted">${data.waiting} waiting for a person · ${data.total} in the last 7 days</span></h1>
${found ? '' : `<p class="error" id="focus-missing">No action ${esc(focus)} in the last 7 days: it may be older, or the link is wrong.</p>`}
<form class="silence" id="decide-form">
<label for="a-by">your name</label><input id="a-by" value="${esc(sessionStorage.getItem('gpualert.author') ?? '')}" placeholder="who approves or denies (recorded)">
<label for="a-comment">comment</label><input id="a-comment" placeholder="why (optional, recorded)">
<span></span><span id="a-result" role="status"></span>
</form>
<h2>Newest first</h2>
${
  data.actions.length === 0
    ? '<p class="muted">no actions: the remediator has decided nothing in the last 7 days</p>'
    : `<table id="actions"><tr><th>host</th><th>action</th><th>state</th><th>decided</th><th>why</th><th>said</th><th></th></tr>${data.actions.map((a) => row(a, focus, now)).join('')}</table>`
}${data.omitted > 0 ? `<p class="muted">${esc(data.omitted)} older actions not shown (gpualert action list shows them all)</p>` : ''}`;
  main.querySelector('#focused-action')?.scrollIntoView({ block: 'center' });
  main.querySelector('#decide-form').addEventListener('submit', (event) => event.preventDefault());
  const result = main.querySelector('#a-result');
  for (const button of main.querySelectorAll('button[data-decide]')) {
    button.addEventListener('click', () => {
      const by = main.querySelector('#a-by').value.trim();
      if (by === '') {
        result.className = 'error';
        result.textContent = 'your name: who decides is recorded with the decision';
        main.querySelector('#a-by').focus();
        return;
      }
      sessionStorage.setItem('gpualert.author', by);
      const comment = main.querySelector('#a-comment').value.trim();
      const decision = button.dataset.decide;
      call('POST', `/v1/actions/${encodeURIComponent(button.dataset.id)}`, { decision, by, ...(comment ? { comment } : {}) })
        .then((a) => redraw(`${a.id}: ${decision} (${a.kind} of ${a.host}); the remediator acts on it within seconds`))
        .catch((error) => {
          result.className = 'error';
          result.textContent = error.message;
        });
    });
  }
}
