// Search view: a form over GET /v1/search (every parameter the API takes),
// results as shop cards with matched menus, a live refresh every 2 s while
// the tab is visible (changed values flash), and a comparison of every
// layout (the default one first) with their step timings side by side.
//
// The location hash holds the request (#search?q=치킨&sort=eta&compare=1):
// the API parameters as sent, plus compare=1 when the comparison is on, so
// a result page can be shared and reloaded. Opening such a URL fills the
// form from it and runs it.
import { el, highlighted, showProblem } from '../lib.js';

export const title = 'Search';

const LIVE_EVERY_MS = 2000;
// Numeric filters, sent as typed: the API validates them and names the
// field when a value is out of range, so the page holds no copy of limits.
const NUMBER_FILTERS = [
  ['max_delivery_fee', 'max delivery fee ₩'],
  ['min_rating', 'min rating'],
  ['min_price', 'min menu price ₩'],
  ['max_price', 'max menu price ₩'],
  ['max_total_fee', 'max fee + menu extra ₩'],
];

export function mount(root, { meta, getJSON }) {
  const f = {}; // form controls by parameter name
  const option = (value, text, selected = false) => {
    const o = el('option', { text, attrs: { value } });
    o.selected = selected;
    return o;
  };
  f.q = el('input', { attrs: { id: 'q', type: 'search', name: 'q', placeholder: '피자, 치킨, 떡볶이…', autocomplete: 'off', maxlength: '100' } });
  f.location = el('select', { attrs: { id: 'location', name: 'location' } },
    option('', 'anywhere in Seoul'),
    meta.presets.map((p, i) => option(String(i), `${p.name} (${p.lat}, ${p.lon})`, i === 0)));
  f.sort = el('select', { attrs: { id: 'sort', name: 'sort' } }, meta.sorts.map((s) => option(s, s.replace('_', ' '))));
  f.category = el('select', { attrs: { id: 'category', name: 'category' } },
    option('', 'all categories'), meta.categories.map((c) => option(c, c)));
  f.open_now = el('input', { attrs: { id: 'open_now', type: 'checkbox', name: 'open_now' } });
  for (const [name] of NUMBER_FILTERS) {
    f[name] = el('input', { attrs: { id: name, name, type: 'text', inputmode: 'decimal', size: '7' } });
  }
  f.size = el('select', { attrs: { id: 'size', name: 'size' } },
    [10, 20, 50, meta.max_size].map((n) => option(String(n), `${n} per page`, n === 20)));
  const live = el('input', { attrs: { id: 'live', type: 'checkbox' } });
  live.checked = true;
  const compare = el('input', { attrs: { id: 'compare', type: 'checkbox' } });

  const label = (text, control) => el('label', {}, el('span', { text }), control);
  const form = el('form', { class: 'search-form', attrs: { id: 'search-form' } },
    el('div', { class: 'row main' },
      f.q, f.location, f.sort,
      el('button', { text: 'Search', attrs: { type: 'submit', id: 'search-button' } })),
    el('div', { class: 'row filters' },
      el('label', { class: 'check' }, f.open_now, 'open now'),
      label('category', f.category),
      NUMBER_FILTERS.map(([name, text]) => label(text, f[name])),
      label('page size', f.size)),
    el('div', { class: 'row toggles' },
      el('label', { class: 'check' }, live, 'live: re-run every 2 s'),
      el('label', { class: 'check' }, compare, `compare every layout side by side (${meta.layouts.join(', ')}: step timings)`)));

  const problemBox = el('div', { class: 'problem', attrs: { id: 'search-problem', role: 'alert' } });
  problemBox.hidden = true;
  const status = el('div', { class: 'status', attrs: { id: 'search-status' } });
  const prev = el('button', { text: '← prev', attrs: { type: 'button', id: 'prev' } });
  const next = el('button', { text: 'next →', attrs: { type: 'button', id: 'next' } });
  const pager = el('div', { class: 'pager' }, prev, next);
  const timings = el('div', { class: 'timings', attrs: { id: 'timings' } });
  const results = el('div', { class: 'results', attrs: { id: 'results' } });
  root.append(form, problemBox, el('div', { class: 'status-row' }, status, pager), timings, results);

  let page = 1;
  let lastParams = null; // the parameters of the search on screen
  let lastShops = new Map(); // shop id -> shop hit, to mark live changes
  let inFlight = null;
  let visible = false;

  function formParams() {
    const p = new URLSearchParams();
    const q = f.q.value.trim();
    if (q) p.set('q', q);
    if (f.location.value !== '') {
      const preset = meta.presets[Number(f.location.value)];
      p.set('lat', String(preset.lat));
      p.set('lon', String(preset.lon));
    }
    if (f.open_now.checked) p.set('open_now', 'true');
    if (f.category.value) p.set('category', f.category.value);
    for (const [name] of NUMBER_FILTERS) {
      const v = f[name].value.trim();
      if (v) p.set(name, v);
    }
    if (f.sort.value !== 'relevance') p.set('sort', f.sort.value);
    if (f.size.value !== '20') p.set('size', f.size.value);
    if (page > 1) p.set('page', String(page));
    return p;
  }

  // hashFor is the location hash of a search: its parameters, and
  // compare=1 when the layouts are compared.
  function hashFor(params) {
    const p = new URLSearchParams(params);
    if (compare.checked) p.set('compare', '1');
    const query = p.toString();
    return '#search' + (query ? '?' + query : '');
  }

  // fillForm sets the form from the parameters of a shared URL; a location
  // that is no preset becomes an option of its own. It returns the API
  // parameters (compare removed).
  function fillForm(hashParams) {
    const p = new URLSearchParams(hashParams);
    compare.checked = p.get('compare') === '1';
    p.delete('compare');
    f.q.value = p.get('q') || '';
    const lat = p.get('lat'), lon = p.get('lon');
    f.location.value = '';
    if (lat !== null && lon !== null) {
      let i = meta.presets.findIndex((pr) => String(pr.lat) === lat && String(pr.lon) === lon);
      if (i < 0) {
        meta.presets.push({ name: 'shared location', lat: Number(lat), lon: Number(lon) });
        i = meta.presets.length - 1;
        f.location.append(option(String(i), `shared location (${lat}, ${lon})`));
      }
      f.location.value = String(i);
    }
    f.open_now.checked = p.get('open_now') === 'true';
    f.category.value = p.get('category') || '';
    for (const [name] of NUMBER_FILTERS) f[name].value = p.get(name) || '';
    f.sort.value = p.get('sort') || 'relevance';
    const size = p.get('size') || '20';
    if (![...f.size.options].some((o) => o.value === size)) f.size.append(option(size, `${size} per page`));
    f.size.value = size;
    page = Math.max(1, Number(p.get('page')) || 1);
    return p;
  }

  // fromHash is the part of the location hash after "#search?".
  const fromHash = () => {
    const at = location.hash.indexOf('?');
    return location.hash.startsWith('#search?') && at >= 0 ? location.hash.slice(at + 1) : '';
  };

  async function run(params, { isLive = false } = {}) {
    if (!isLive && location.hash !== hashFor(params)) {
      // replaceState: the URL follows the form without a hashchange, so
      // the shell does not reopen the view.
      history.replaceState(null, '', hashFor(params));
    }
    inFlight?.abort();
    const ctl = new AbortController();
    inFlight = ctl;
    const key = params.toString();
    results.dataset.state = 'loading';
    const layouts = compare.checked ? meta.layouts : [meta.layouts[0]];
    try {
      const answers = await Promise.all(layouts.map((layout) => {
        const p = new URLSearchParams(params);
        p.set('explain', 'true');
        if (layout !== meta.layouts[0]) p.set('layout', layout);
        const answer = getJSON('/v1/search?' + p.toString(), ctl.signal);
        // A compared layout that cannot answer (the hot layout without its
        // plugin, a table being rebuilt) is shown as such; the first one's
        // failure is the search's.
        return layout === meta.layouts[0] ? answer : answer.catch((error) => {
          if (error.name === 'AbortError') throw error;
          return { layout, error };
        });
      }));
      if (ctl !== inFlight) return;
      showProblem(problemBox, null);
      lastParams = params;
      renderStatus(answers[0]);
      renderTimings(answers);
      renderResults(answers[0], isLive);
      results.dataset.query = key;
      results.dataset.state = 'done';
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (ctl !== inFlight) return;
      showProblem(problemBox, err);
      lastParams = null; // no live refresh of a failed search: the error stays
      results.dataset.query = key;
      results.dataset.state = 'error';
    } finally {
      if (ctl === inFlight) inFlight = null;
    }
  }

  function renderStatus(resp) {
    const pages = Math.max(1, Math.ceil(resp.total / resp.size));
    status.replaceChildren(
      el('strong', { text: resp.total.toLocaleString() }), ' shops · ',
      `page ${resp.page} of ${pages.toLocaleString()} · ${resp.layout} layout · ${resp.took_ms.toFixed(1)} ms`);
    prev.disabled = resp.page <= 1;
    next.disabled = resp.page >= pages || resp.page * resp.size >= 10000;
  }

  function renderTimings(answers) {
    timings.replaceChildren(...answers.map((resp) => {
      if (resp.error) {
        return el('div', { class: 'plan unavailable', dataset: { layout: resp.layout } },
          el('h3', { text: resp.layout }), el('p', { class: 'muted', text: resp.error.message }));
      }
      const steps = resp.explain?.steps || [];
      return el('div', { class: 'plan', dataset: { layout: resp.layout } },
        el('h3', {}, `${resp.layout} `, el('span', { class: 'took', text: `${resp.took_ms.toFixed(1)} ms total` })),
        el('table', {},
          el('thead', {}, el('tr', {}, ['step', 'took ms', 'server ms', 'requests', 'candidates'].map((h) => el('th', { text: h })))),
          el('tbody', {}, steps.map((s) => el('tr', { class: 'step' },
            el('td', { class: 'name', text: s.name }),
            el('td', { class: 'num took-ms', text: s.took_ms.toFixed(2) }),
            el('td', { class: 'num', text: s.server_took_ms }),
            el('td', { class: 'num', text: s.requests }),
            el('td', { class: 'num', text: s.candidates.toLocaleString() }))))));
    }));
    const answered = answers.filter((r) => !r.error);
    if (answered.length >= 2) {
      const ids = (r) => r.shops.map((s) => s.id).join(',');
      const same = answered.every((r) => ids(r) === ids(answered[0]) && r.total === answered[0].total);
      timings.append(el('p', { class: same ? 'same' : 'differ', attrs: { id: 'equivalence' },
        text: same ? `the ${answered.length} layouts return the same shops in the same order`
          : 'the layouts returned different pages (a hot field changed between the requests, or a bug)' }));
    }
  }

  function renderResults(resp, isLive) {
    const before = isLive ? lastShops : new Map();
    lastShops = new Map(resp.shops.map((s) => [s.id, s]));
    if (resp.shops.length === 0) {
      results.replaceChildren(el('p', { class: 'muted', text: 'No shop matches this search.' }));
      return;
    }
    results.replaceChildren(...resp.shops.map((s) => card(s, before.get(s.id))));
  }

  // value renders one shop field, flashing when a live refresh changed it.
  function value(cls, text, changed) {
    return el('span', { class: `${cls}${changed ? ' changed' : ''}`, text });
  }

  function card(s, old) {
    const diff = (k) => old !== undefined && old[k] !== s[k];
    const menus = s.matched_menus || [];
    // delivers is absent without a location; false: outside the shop's
    // delivery radius (shown below the shops that deliver).
    const outside = s.delivers === false;
    return el('article', { class: `shop-card${s.open && !outside ? '' : ' closed'}`, dataset: { shopId: String(s.id) } },
      el('header', {},
        el('h3', { class: 'shop-name', text: s.name }),
        el('span', { class: 'category', text: s.category }),
        value(s.open ? 'badge open' : 'badge shut', s.open ? 'open' : 'closed', diff('open')),
        outside ? el('span', { class: 'badge shut outside', text: 'does not deliver here' }) : null),
      el('div', { class: 'facts' },
        value('minutes', `${s.delivery_minutes} min`, diff('delivery_minutes')),
        value('fee', `배달비 ₩${s.delivery_fee.toLocaleString()}`, diff('delivery_fee')),
        value('rating', `★ ${s.rating.toFixed(1)} (${s.review_count.toLocaleString()})`, diff('rating')),
        s.distance_m != null ? el('span', { class: 'distance', text: formatDistance(s.distance_m) }) : null,
        s.eta_minutes != null ? value('eta', `ETA ${s.eta_minutes} min`, diff('eta_minutes')) : null,
        el('span', { class: 'district muted', text: s.district })),
      s.rank ? rankLine(s.rank) : null,
      menus.length ? el('ul', { class: 'menus' }, menus.map(menuItem)) : null);
  }

  // rankLine shows each relevance signal's points (explain; docs/search.md,
  // "Relevance"), in the order the formula adds them, and the total the
  // layout sorted by.
  function rankLine(r) {
    const part = (name, points, title) => el('span', { class: 'signal', dataset: { signal: name }, attrs: { title } },
      `${name} ${points.toFixed(2)}`);
    return el('div', { class: 'rank muted', dataset: { total: String(r.total) } },
      el('strong', { text: `relevance ${r.total.toFixed(2)}` }), ' = ',
      part('open', r.open, 'open now'), ' + ',
      part('delivers', r.delivers, 'delivers to this location'), ' + ',
      part('text', r.text, `text score ${r.text_score}`), ' + ',
      part('distance', r.distance, 'linear decay with distance'), ' + ',
      part('eta', r.eta, 'linear decay with delivery minutes'), ' + ',
      part('rating', r.rating, `Bayesian rating ${r.bayes_rating.toFixed(2)} ★`));
  }

  function menuItem(m) {
    const hl = m.highlight || {};
    const name = hl.name?.length ? inFull(m.name, hl.name[0]) : [m.name];
    const desc = hl.description?.length ? highlighted(hl.description.join(' … ')) : [m.description];
    return el('li', { class: 'menu' },
      el('span', { class: 'menu-name' }, ...name),
      el('span', { class: 'price', text: `₩${m.price.toLocaleString()}` }),
      m.popular ? el('span', { class: 'tag', text: 'popular' }) : null,
      m.sold_out ? el('span', { class: 'tag shut', text: 'sold out' }) : null,
      el('div', { class: 'menu-desc muted' }, ...desc));
  }

  const submit = () => { page = 1; run(formParams()); };
  form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  for (const c of [f.location, f.sort, f.category, f.open_now, f.size, compare]) c.addEventListener('change', submit);
  prev.addEventListener('click', () => { page = Math.max(1, page - 1); run(formParams()); });
  next.addEventListener('click', () => { page += 1; run(formParams()); });

  setInterval(() => {
    if (visible && live.checked && lastParams && !inFlight && document.visibilityState === 'visible') {
      run(lastParams, { isLive: true });
    }
  }, LIVE_EVERY_MS);

  return {
    show() {
      visible = true;
      const shared = fromHash();
      if (shared && (!lastParams || hashFor(lastParams) !== location.hash)) {
        run(fillForm(shared)); // a shared or reloaded URL, or the back button
      } else if (!lastParams) {
        submit();
      } else if (location.hash !== hashFor(lastParams)) {
        history.replaceState(null, '', hashFor(lastParams)); // back from another view
      }
      f.q.focus();
    },
    hide() { visible = false; },
  };
}

// inFull shows the whole text with a highlight fragment's marks: the
// highlighter may return only part of a long or punctuated name.
function inFull(text, fragment) {
  const plain = fragment.replace(/<\/?em>/g, '');
  const at = text.indexOf(plain);
  if (at < 0) return highlighted(fragment);
  return [text.slice(0, at), ...highlighted(fragment), text.slice(at + plain.length)];
}

function formatDistance(m) {
  return m < 1000 ? `${Math.round(m)} m` : `${(m / 1000).toFixed(1)} km`;
}
