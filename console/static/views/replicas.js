// Replicas view: live C3 statistics of every Redis read replica
// (GET /v1/admin/replicas) and every OpenSearch endpoint
// (GET /v1/admin/opensearch-endpoints), polled every second while the tab
// is visible: C3 rank (Ψ, lower is better; the best one is marked), requests
// in flight, EWMA response time, ejections, requests started and failed.
// Both routes are admin routes: the view waits for the token.
import { el, showProblem } from '../lib.js';

export const title = 'Replicas';

const POLL_MS = 1000;

// SOURCES are the two selections the view shows.
const SOURCES = [
  { id: 'redis', title: 'Redis read replicas', url: '/v1/admin/replicas', list: 'replicas', name: 'addr' },
  { id: 'opensearch', title: 'OpenSearch endpoints', url: '/v1/admin/opensearch-endpoints', list: 'endpoints', name: 'host' },
];

export function mount(root, { requestJSON, hasAdminToken }) {
  const problemBox = el('div', { class: 'problem', attrs: { id: 'replicas-problem', role: 'alert' } });
  problemBox.hidden = true;
  const waiting = el('p', { class: 'muted', attrs: { id: 'replicas-token' }, text: 'Enter the admin token (top right) to see the replicas.' });
  const panels = SOURCES.map((src) => {
    const body = el('div', { attrs: { id: 'replicas-' + src.id } });
    return { src, body, card: el('section', { class: 'card' }, el('h2', { text: src.title }), body) };
  });
  root.append(waiting, problemBox, ...panels.map((p) => p.card));

  let timer = null;
  let busy = false;

  async function poll() {
    waiting.hidden = hasAdminToken();
    if (!hasAdminToken() || busy) return;
    busy = true;
    try {
      const answers = await Promise.all(panels.map((p) => requestJSON('GET', p.src.url, { admin: true })));
      showProblem(problemBox, null);
      panels.forEach((p, i) => render(p, answers[i]));
    } catch (err) {
      showProblem(problemBox, err);
      for (const p of panels) p.body.dataset.state = 'error';
    } finally {
      busy = false;
    }
  }

  function render({ src, body }, view) {
    const rows = view[src.list] || [];
    body.dataset.policy = view.policy;
    if (rows.length === 0) {
      body.dataset.state = 'empty';
      body.replaceChildren(el('p', { class: 'muted note', text: view.note || 'none' }));
      return;
    }
    const now = Date.now();
    const ranked = rows.filter((r) => r.HasStats);
    const best = ranked.length ? Math.min(...ranked.map((r) => r.Rank)) : null;
    const head = ['replica', 'C3 rank Ψ (ms)', 'in flight', 'EWMA response (ms)', 'ejections', 'chosen', 'failures'];
    body.replaceChildren(
      el('p', { class: 'muted note' }, `policy ${view.policy}`, view.primary ? ` · primary ${view.primary} (${view.primary_reads} reads fell back to it)` : ''),
      el('table', { class: 'grid-table' },
        el('thead', {}, el('tr', {}, head.map((h) => el('th', { text: h })))),
        el('tbody', {}, rows.map((r) => {
          const ejected = Date.parse(r.EjectedUntil) > now;
          const cls = [r.HasStats && r.Rank === best ? 'best' : '', ejected ? 'ejected' : ''].filter(Boolean).join(' ');
          return el('tr', { class: cls, dataset: { name: r[src.name] } },
            el('td', { class: 'name', text: r[src.name] }),
            el('td', { class: 'num rank', text: r.HasStats ? (r.Rank * 1000).toFixed(3) : '—' }),
            el('td', { class: 'num outstanding', text: r.Outstanding }),
            el('td', { class: 'num ewma', text: r.HasStats ? (r.ResponseTime / 1e6).toFixed(2) : '—' }),
            el('td', { class: 'num ejections', text: ejected ? `${r.Ejections} (ejected ${Math.ceil((Date.parse(r.EjectedUntil) - now) / 1000)} s)` : String(r.Ejections) }),
            el('td', { class: 'num chosen', text: r.Chosen }),
            el('td', { class: 'num failures', text: r.Failures }));
        }))));
    body.dataset.state = 'data';
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
