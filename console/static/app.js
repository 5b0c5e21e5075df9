// The console shell: reads /console/api/meta, shows a nav entry for each
// view the server lists there, and mounts a view when its tab is opened
// (location hash #<id>, or #<id>?<state> for a view that keeps its state in
// the URL, like the search view). To add a view, add one entry here and one module
// under views/ (see the package doc of console).
import { el, getJSON, requestJSON, setAdminToken, hasAdminToken, showProblem } from './lib.js';

const VIEWS = [
  { id: 'search', title: 'Search', module: './views/search.js' },
  { id: 'feed', title: 'Feed', module: './views/feed.js' },
  { id: 'links', title: 'Links', module: './views/links.js', admin: true },
  { id: 'reindex', title: 'Reindex', module: './views/reindex.js', admin: true },
  { id: 'replicas', title: 'Replicas', module: './views/replicas.js', admin: true },
  { id: 'ops', title: 'Ops', module: './views/ops.js' },
];

const mounted = new Map(); // id -> { root, view }
let current = null;

async function start() {
  const problemBox = document.getElementById('problem');
  let meta;
  try {
    meta = await getJSON('/console/api/meta');
  } catch (err) {
    document.getElementById('loading').remove();
    showProblem(problemBox, err);
    return;
  }
  const views = VIEWS.filter((v) => meta.views.includes(v.id));
  const nav = document.getElementById('nav');
  for (const v of views) {
    nav.append(el('a', { text: v.title, attrs: { href: '#' + v.id }, dataset: { view: v.id } }));
  }
  // Views that read admin routes take the token from the header's box;
  // it is kept in lib.js's memory only, and views hear of a new one by the
  // 'admintoken' event on window.
  if (views.some((v) => v.admin)) {
    const box = document.getElementById('admin-token');
    document.getElementById('admin').hidden = false;
    box.addEventListener('change', () => {
      setAdminToken(box.value);
      window.dispatchEvent(new Event('admintoken'));
    });
  }
  const ctx = { meta, getJSON, requestJSON, hasAdminToken, showProblem };
  const open = async () => {
    const id = location.hash.slice(1).split('?')[0];
    const wanted = views.find((v) => v.id === id) || views[0];
    if (!wanted) {
      document.getElementById('loading').textContent = 'This server serves no console views.';
      return;
    }
    for (const a of nav.children) a.classList.toggle('active', a.dataset.view === wanted.id);
    if (current && current !== wanted.id) {
      const m = mounted.get(current);
      m.root.hidden = true;
      m.view.hide?.();
    }
    current = wanted.id;
    let m = mounted.get(wanted.id);
    if (!m) {
      const root = el('section', { class: 'view', attrs: { id: 'view-' + wanted.id } });
      document.getElementById('views').append(root);
      try {
        const mod = await import(wanted.module);
        m = { root, view: mod.mount(root, ctx) };
      } catch (err) {
        showProblem(problemBox, { problem: { title: 'cannot load view ' + wanted.id, detail: String(err) } });
        return;
      }
      mounted.set(wanted.id, m);
      document.getElementById('loading')?.remove();
    }
    m.root.hidden = false;
    m.view.show?.();
  };
  window.addEventListener('hashchange', open);
  await open();
}

start();
