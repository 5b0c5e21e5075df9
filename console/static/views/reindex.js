// Reindex view: start a live reindex of an alias (POST /admin/reindex), the
// history of runs (GET /admin/reindex, newest first) and the selected run's
// step, copy progress and ETA, refreshed every second while the tab is
// visible, with its actions: pause, resume, rethrottle, continue, rollback
// and cleanup (POST /admin/reindex/{id}/{action}). Every route is an admin
// route: the view waits for the token.
import { el, showProblem } from '../lib.js';

export const title = 'Reindex';

const POLL_MS = 1000;
// FINAL are the steps after which a job changes no more by itself.
const FINAL = ['done', 'rolled_back', 'aborted', 'failed', 'cleaned'];

export function mount(root, { meta, requestJSON, hasAdminToken }) {
  const problemBox = el('div', { class: 'problem', attrs: { id: 'reindex-problem', role: 'alert' } });
  problemBox.hidden = true;
  const fail = (err) => showProblem(problemBox, err);
  const label = (text, control) => el('label', {}, el('span', { text }), control);
  const option = (value, text) => el('option', { text, attrs: { value } });

  const alias = el('select', { attrs: { id: 'reindex-alias' } }, meta.reindex_aliases.map((a) => option(a, a)));
  const rate = el('input', { attrs: { id: 'reindex-rate', type: 'text', inputmode: 'decimal', size: '8', placeholder: 'default' } });
  const batch = el('input', { attrs: { id: 'reindex-batch', type: 'text', inputmode: 'numeric', size: '6', placeholder: 'default' } });
  const start = el('button', { text: 'Start reindex', attrs: { type: 'button', id: 'reindex-start' } });
  start.addEventListener('click', async () => {
    const body = { alias: alias.value };
    if (rate.value.trim()) body.requests_per_second = Number(rate.value.trim());
    if (batch.value.trim()) body.batch_size = Number(batch.value.trim());
    try {
      const job = await requestJSON('POST', '/admin/reindex', { admin: true, body });
      fail(null);
      selected = job.id;
      poll();
    } catch (err) { fail(err); }
  });

  // Kept across refreshes, so what is typed into it stays.
  const rethrottleRate = el('input', { attrs: { id: 'rethrottle-rate', type: 'text', inputmode: 'decimal', size: '8', placeholder: '-1 = unthrottled' } });
  const detail = el('div', { attrs: { id: 'reindex-job' } });
  const history = el('div', { attrs: { id: 'reindex-history' } });
  const waiting = el('p', { class: 'muted', attrs: { id: 'reindex-token' }, text: 'Enter the admin token (top right) to start a reindex and see the runs.' });
  root.append(waiting, problemBox,
    el('section', { class: 'card' }, el('h2', { text: 'Start a live reindex' }),
      el('p', { class: 'muted note', text: 'Copies the index behind the alias into a new one with the layout\'s current body, replays the events that arrived meanwhile, then swaps the alias.' }),
      el('div', { class: 'form-row' }, label('alias', alias), label('requests per second (-1 unthrottled)', rate), label('batch size', batch), start)),
    el('section', { class: 'card' }, el('h2', { text: 'Selected run' }), detail),
    el('section', { class: 'card' }, el('h2', { text: 'History of runs' }), history));

  let selected = null; // id of the job shown in detail
  let timer = null;
  let busy = false;

  async function act(action, body) {
    try {
      await requestJSON('POST', `/admin/reindex/${encodeURIComponent(selected)}/${action}`, { admin: true, body });
      fail(null);
      poll();
    } catch (err) { fail(err); }
  }

  async function poll() {
    waiting.hidden = hasAdminToken();
    if (!hasAdminToken() || busy) return;
    busy = true;
    try {
      const jobs = (await requestJSON('GET', '/admin/reindex', { admin: true })).jobs || []; // null when none ran
      fail(null);
      if (!selected && jobs.length) selected = jobs[0].id;
      renderHistory(jobs);
      renderDetail(jobs.find((j) => j.id === selected));
    } catch (err) {
      fail(err);
    } finally {
      busy = false;
    }
  }

  function renderHistory(jobs) {
    history.dataset.count = String(jobs.length);
    if (!jobs.length) {
      history.replaceChildren(el('p', { class: 'muted', text: 'No reindex has run.' }));
      return;
    }
    history.replaceChildren(el('table', { class: 'grid-table' },
      el('thead', {}, el('tr', {}, ['run', 'alias', 'started', 'step', 'copied', 'took', 'source → target', ''].map((h) => el('th', { text: h })))),
      el('tbody', {}, jobs.map((j) => el('tr', { class: j.id === selected ? 'current' : '', dataset: { job: j.id, step: j.step } },
        el('td', { text: j.id }),
        el('td', { text: j.alias }),
        el('td', { text: new Date(j.created).toLocaleString() }),
        el('td', { class: 'step', text: j.step + (j.paused ? ' (paused)' : '') + (j.error ? ' — ' + j.error : '') }),
        el('td', { class: 'num', text: `${j.copy.created.toLocaleString()} / ${j.copy.total.toLocaleString()}` }),
        el('td', { class: 'num', text: j.copy_seconds ? `${j.copy_seconds.toFixed(1)} s copy` : '' }),
        el('td', { text: `${j.source} → ${j.target}` }),
        el('td', {}, el('button', { text: 'show', attrs: { type: 'button' }, on: { click: () => { selected = j.id; poll(); } } })))))));
  }

  function renderDetail(j) {
    if (!j) {
      detail.replaceChildren(el('p', { class: 'muted', text: 'Start a reindex, or pick a run from the history.' }));
      delete detail.dataset.job;
      return;
    }
    const final = FINAL.includes(j.step);
    const bar = el('span', { class: 'bar' });
    bar.style.width = Math.round(3 * Math.min(100, j.copy_percent)) + 'px'; // the CSP refuses style attributes
    const eta = j.step === 'copying' && j.copy_eta_seconds > 0 ? `ETA ${formatSeconds(j.copy_eta_seconds)}` : '';
    const button = (id, text, onClick, enabled) => {
      const b = el('button', { text, attrs: { type: 'button', id }, on: { click: onClick } });
      b.disabled = !enabled;
      return b;
    };
    detail.dataset.job = j.id;
    detail.dataset.step = j.step;
    detail.dataset.paused = String(j.paused);
    detail.replaceChildren(...[ // (replaceChildren would show a null as "null")
      el('div', { class: 'kv' },
        el('span', {}, 'run', el('strong', { text: j.id })),
        el('span', {}, 'alias', el('strong', { text: j.alias })),
        el('span', {}, 'step', el('strong', { class: 'step', text: j.step })),
        j.paused ? el('span', { class: 'paused', text: 'paused' }) : null,
        el('span', {}, 'rate', el('strong', { class: 'rate', text: j.requests_per_second < 0 ? 'unthrottled' : `${j.requests_per_second} req/s` }))),
      el('div', { class: 'kv' },
        el('span', {}, 'copy', el('strong', { class: 'percent', text: `${j.copy_percent.toFixed(1)} %` })), bar,
        el('span', { class: 'copied', text: `${j.copy.created.toLocaleString()} of ${j.copy.total.toLocaleString()} documents` }),
        el('span', { class: 'eta', text: eta }),
        el('span', { class: 'muted', text: `${j.catchup_events.toLocaleString()} events replayed` })),
      j.error ? el('p', { class: 'problem', text: `${j.failed_step || j.step}: ${j.error}` }) : null,
      el('div', { class: 'form-row' },
        button('reindex-pause', 'Pause', () => act('pause'), j.step === 'copying' && !j.paused),
        button('reindex-resume', 'Resume', () => act('resume'), j.step === 'copying' && j.paused),
        label('new rate', rethrottleRate),
        button('reindex-rethrottle', 'Rethrottle', () => act('rethrottle', { requests_per_second: Number(rethrottleRate.value.trim()) }), j.step === 'copying'),
        button('reindex-run', 'Continue', () => act('run'), j.step === 'failed' || j.step === 'aborted'),
        button('reindex-rollback', 'Roll back', () => act('rollback'), !['rolling_back', 'rolled_back', 'cleaned'].includes(j.step)),
        button('reindex-cleanup', 'Clean up', () => act('cleanup'), final && j.step !== 'cleaned'))].filter(Boolean));
  }

  window.addEventListener('admintoken', () => { if (timer) poll(); });
  return {
    show() {
      poll();
      timer = setInterval(() => { if (document.visibilityState === 'visible') poll(); }, POLL_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}

function formatSeconds(s) {
  return s < 90 ? `${Math.round(s)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}
