// Links view: create a click (POST /v1/clicks) and resolve it
// (POST /v1/clicks/{id}/resolve) as an app would; and, behind the admin
// token, the link store's migration mode with the modes allowed next and
// the shadow-read differences (GET/PUT /v1/admin/links/migration, refreshed
// every 2 s while the tab is visible), and the memory report: bytes per
// record of every value format in Redis (GET /v1/admin/links/memory).
import { el, showProblem } from '../lib.js';

export const title = 'Links';

const MIGRATION_EVERY_MS = 2000;

export function mount(root, { requestJSON, hasAdminToken }) {
  const problemBox = el('div', { class: 'problem', attrs: { id: 'links-problem', role: 'alert' } });
  problemBox.hidden = true;
  const fail = (err) => showProblem(problemBox, err);

  // Create and resolve.
  const deepLink = el('input', { attrs: { id: 'deep-link', type: 'text', value: 'baedal://shop/1' } });
  // The web fallback defaults to this server's origin: the console names
  // no other host.
  const fallback = el('input', { attrs: { id: 'fallback-url', type: 'text', value: new URL('/shop/1', location.origin).href } });
  const create = el('button', { text: 'Create click', attrs: { type: 'button', id: 'create-click' } });
  const clickID = el('input', { attrs: { id: 'click-id', type: 'text', placeholder: 'click id (UUID)', size: '38' } });
  const resolve = el('button', { text: 'Resolve', attrs: { type: 'button', id: 'resolve-click' } });
  const clickResult = el('div', { class: 'kv', attrs: { id: 'click-result' } });
  const resolveResult = el('div', { class: 'kv', attrs: { id: 'resolve-result' } });
  const label = (text, control) => el('label', {}, el('span', { text }), control);

  create.addEventListener('click', async () => {
    const body = { deep_link_url: deepLink.value.trim(), clicked_at: new Date().toISOString() };
    if (fallback.value.trim()) body.fallback_url = fallback.value.trim();
    try {
      const c = await requestJSON('POST', '/v1/clicks', { body });
      fail(null);
      clickID.value = c.click_id;
      clickResult.replaceChildren(el('span', {}, 'created', el('strong', { class: 'created-id', text: c.click_id })),
        el('span', {}, 'expires', el('strong', { text: new Date(c.expires_at).toLocaleString() })));
      clickResult.dataset.clickId = c.click_id;
    } catch (err) { fail(err); }
  });
  resolve.addEventListener('click', async () => {
    resolveResult.dataset.state = 'loading';
    try {
      const r = await requestJSON('POST', `/v1/clicks/${encodeURIComponent(clickID.value.trim())}/resolve`);
      fail(null);
      resolveResult.replaceChildren(el('div', { class: 'kv' },
        el('span', {}, 'deep link', el('strong', { class: 'deep-link', text: r.deep_link_url })),
        r.fallback_url ? el('span', {}, 'fallback', el('strong', { class: 'fallback', text: r.fallback_url })) : null,
        el('span', { class: 'consumed', text: r.already_consumed ? 'already consumed before (a repeated resolution)' : 'first resolution: now consumed' })));
      resolveResult.dataset.state = r.already_consumed ? 'again' : 'first';
    } catch (err) {
      fail(err);
      resolveResult.replaceChildren();
      resolveResult.dataset.state = 'error';
    }
  });

  // Migration (admin).
  const mode = el('strong', { attrs: { id: 'links-mode' } });
  const nextModes = el('span', { attrs: { id: 'links-next' } });
  const report = el('div', { attrs: { id: 'links-report' } });

  async function loadMigration() {
    if (!hasAdminToken()) return;
    try {
      render(await requestJSON('GET', '/v1/admin/links/migration', { admin: true }));
    } catch (err) { fail(err); }
  }

  async function switchMode(m) {
    try {
      render(await requestJSON('PUT', '/v1/admin/links/migration', { admin: true, body: { mode: m } }));
      fail(null);
    } catch (err) { fail(err); }
  }

  function render(state) {
    mode.textContent = state.mode;
    nextModes.replaceChildren(...(state.allowed_next.length ? state.allowed_next.map((m) =>
      el('button', { text: '→ ' + m, attrs: { type: 'button' }, dataset: { mode: m }, on: { click: () => switchMode(m) } }))
      : [el('span', { class: 'muted', text: 'no other mode (no old store is configured)' })]));
    const r = state.report;
    const figures = [['compared', r.compared], ['equal', r.equal], ['different', r.different],
      ['missing in new', r.missing_in_new], ['errors', r.errors], ['skipped', r.skipped]];
    const fields = Object.entries(r.field_counts || {}).sort((a, b) => b[1] - a[1]);
    // el() drops null children; replaceChildren would show them as "null".
    report.replaceChildren(el('div', {},
      el('div', { class: 'kv' }, figures.map(([k, v]) => el('span', { dataset: { figure: k } }, k, el('strong', { text: v.toLocaleString() })))),
      fields.length ? el('p', { class: 'note' }, 'different fields: ', fields.map(([f, n]) => `${f} ×${n}`).join(', ')) : null,
      r.samples.length ? el('table', { class: 'grid-table samples' },
        el('thead', {}, el('tr', {}, ['click', 'field', 'old store', 'new store'].map((h) => el('th', { text: h })))),
        el('tbody', {}, r.samples.map((d) => el('tr', {},
          el('td', { text: d.click_id || '' }), el('td', { text: d.field }), el('td', { text: d.old }), el('td', { text: d.new })))))
        : el('p', { class: 'muted note', text: 'no difference sampled' })));
    report.dataset.state = 'data';
  }

  // Memory report (admin).
  const records = el('input', { attrs: { id: 'memory-records', type: 'text', inputmode: 'numeric', size: '6', value: '200' } });
  const measure = el('button', { text: 'Measure in Redis', attrs: { type: 'button', id: 'measure-memory' } });
  const memory = el('div', { attrs: { id: 'links-memory' } });
  measure.addEventListener('click', async () => {
    memory.dataset.state = 'loading';
    try {
      const rep = await requestJSON('GET', '/v1/admin/links/memory?records=' + encodeURIComponent(records.value.trim()), { admin: true });
      fail(null);
      renderMemory(rep);
    } catch (err) {
      fail(err);
      memory.dataset.state = 'error';
    }
  });

  // bar is a bar px wide, sized through the CSSOM: the
  // Content-Security-Policy refuses style attributes.
  const bar = (px) => {
    const b = el('span', { class: 'bar' });
    b.style.width = px + 'px';
    return b;
  };

  function renderMemory(rep) {
    const widest = Math.max(1, ...rep.formats.map((f) => f.memory_usage_per_record));
    memory.replaceChildren(
      el('p', { class: 'muted note', text: `${rep.records.toLocaleString()} generated records per format, written under fresh ids, measured with MEMORY USAGE, then deleted` }),
      el('table', { class: 'grid-table' },
        el('thead', {}, el('tr', {}, ['format', 'key', 'key B/rec', 'value B/rec', 'MEMORY USAGE B/rec', 'vs baseline', ''].map((h) => el('th', { text: h })))),
        el('tbody', {}, rep.formats.map((f) => el('tr', { class: f.current ? 'current' : '', dataset: { codec: f.codec } },
          el('td', { class: 'codec', text: f.codec + (f.current ? ' (current)' : '') }),
          el('td', { text: f.key_format }),
          f.unavailable ? el('td', { attrs: { colspan: '5' }, class: 'muted', text: f.unavailable }) : [
            el('td', { class: 'num', text: f.key_bytes_per_record }),
            el('td', { class: 'num', text: f.value_bytes_per_record }),
            el('td', { class: 'num usage', text: f.memory_usage_per_record }),
            el('td', { class: 'num ratio', text: f.memory_ratio.toFixed(2) + '×' }),
            el('td', {}, bar(Math.round(160 * f.memory_usage_per_record / widest)))])))));
    memory.dataset.state = 'data';
  }

  const needsToken = el('p', { class: 'muted', attrs: { id: 'links-token' }, text: 'Enter the admin token (top right) for the migration and memory report.' });
  root.append(problemBox,
    el('section', { class: 'card' }, el('h2', { text: 'Create and resolve a click' }),
      el('div', { class: 'form-row' }, label('deep link', deepLink), label('fallback URL', fallback), create),
      clickResult,
      el('div', { class: 'form-row' }, label('click id', clickID), resolve),
      resolveResult),
    needsToken,
    el('section', { class: 'card' }, el('h2', { text: 'Migration' }),
      el('div', { class: 'kv' }, el('span', {}, 'mode', mode), el('span', {}, 'switch to ', nextModes)),
      el('h3', { text: 'Shadow reads (new store compared with the old)' }), report),
    el('section', { class: 'card' }, el('h2', { text: 'Memory per record in Redis' }),
      el('div', { class: 'form-row' }, label('records per format', records), measure), memory));

  let timer = null;
  const refresh = () => {
    needsToken.hidden = hasAdminToken();
    if (document.visibilityState === 'visible') loadMigration();
  };
  window.addEventListener('admintoken', () => { if (timer) refresh(); });
  return {
    show() {
      refresh();
      timer = setInterval(refresh, MIGRATION_EVERY_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}
