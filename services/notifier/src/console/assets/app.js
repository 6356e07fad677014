// The console: a hash router over six pages, each drawn from the notifier's API. No framework,
// no build step: plain ES modules the notifier serves from its own package.
import { call, forgetToken, setToken, token, Unauthorized } from './api.js';
import { drawActions } from './actions-page.js';
import { drawAlerts, fetchAlerts } from './alerts-page.js';
import { route } from './dom.js';
import { drawFleet } from './fleet-grid.js';
import { drawGpu } from './gpu-page.js';
import { drawMaintenance } from './maintenance-page.js';
import { drawSilences } from './silences-page.js';

/** The live pages redraw this often; a page with a form being filled in does not. */
const REFRESH_MS = 5_000;

const main = document.getElementById('view');
const form = document.getElementById('token-form');
const status = document.getElementById('status');
let generation = 0;
let draws = 0;

function askForToken(message) {
  forgetToken();
  form.hidden = false;
  main.hidden = true;
  document.getElementById('token-error').textContent = message ?? '';
  document.getElementById('token').focus();
}

function showError(error) {
  if (error instanceof Unauthorized) return askForToken(error.message);
  status.textContent = '';
  const p = document.createElement('p');
  p.className = 'error';
  p.id = 'page-error';
  p.textContent = error instanceof Error ? error.message : String(error);
  main.prepend(p);
}

/** Marks the page drawn once the browser has painted it (a test or a bench waits for this). */
function drawn(view) {
  requestAnimationFrame(() =>
    setTimeout(() => {
      draws += 1;
      document.body.dataset.view = view;
      document.body.dataset.drawn = String(draws);
      document.body.dataset.drawnMs = String(Math.round(performance.now()));
    }, 0),
  );
}

async function render(quietly = false) {
  if (!token()) return askForToken();
  form.hidden = true;
  main.hidden = false;
  const mine = ++generation;
  const [page = 'fleet', ...rest] = route();
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.nav === (page === 'gpu' ? 'fleet' : page));
  if (!quietly) status.textContent = 'loading…';
  const stale = () => mine !== generation;
  try {
    if (page === 'gpu' && rest.length === 2) {
      const detail = await call('GET', `/v1/fleet/${encodeURIComponent(rest[0])}/${encodeURIComponent(rest[1])}`);
      if (stale()) return;
      drawGpu(main, detail);
    } else if (page === 'alerts') {
      const shown = await fetchAlerts(rest);
      if (stale()) return;
      drawAlerts(main, shown, showError);
    } else if (page === 'silences') {
      const prefill =
        rest[0] === 'new' && rest.length === 3
          ? `host="${rest[1].replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"\ngpu="${rest[2]}"`
          : rest[0] === 'with'
            ? (rest[1] ?? '')
            : '';
      await drawSilences(main, prefill, (message) =>
        render().then(() => {
          status.textContent = message;
        }),
      );
    } else if (page === 'actions') {
      await drawActions(main, rest[0], (message) =>
        render().then(() => {
          status.textContent = message;
        }),
      );
      if (stale()) return;
    } else if (page === 'maintenance') {
      const [snapshot, { silences }] = await Promise.all([call('GET', '/v1/fleet?view=grid'), call('GET', '/v1/silences')]);
      if (stale()) return;
      drawMaintenance(main, snapshot, silences);
    } else {
      const snapshot = await call('GET', '/v1/fleet?view=grid');
      if (stale()) return;
      drawFleet(main, snapshot);
    }
    status.textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
    drawn(page);
  } catch (error) {
    if (!stale()) showError(error);
  }
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  setToken(document.getElementById('token').value.trim());
  document.getElementById('token').value = '';
  render().catch(showError);
});
document.getElementById('forget-token').addEventListener('click', () => askForToken('token forgotten'));
window.addEventListener('hashchange', () => {
  render().catch(showError);
});
setInterval(() => {
  const [page = 'fleet'] = route();
  const typing = document.activeElement && ['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName);
  if (document.visibilityState === 'visible' && page !== 'silences' && !typing && token()) render(true).catch(showError);
}, REFRESH_MS);
render().catch(showError);
