// Ops view: polls /console/api/ops every 2 s and draws live charts of the
// indexer (event rate, consumer lag, freshness, bulk latency) and the
// searcher (whole-search and per-step latency). Counters become rates and
// histograms become windowed p50/p99 from the difference between two polls,
// so the charts show the last 2 s, not the process's lifetime. A metric the
// server does not have (its component is not running) shows "no data".
import { el, showProblem } from '../lib.js';
import { lineChart } from '../chart.js';

export const title = 'Ops';

const POLL_MS = 2000;
const WINDOW_MS = 3 * 60 * 1000;

const PANELS = [
  { id: 'event-rate', title: 'Indexer events / s', metric: 'baedal_indexer_events_total', kind: 'rate', by: ['layout'], unit: '/s' },
  { id: 'lag', title: 'Indexer lag (entries not yet delivered)', metric: 'baedal_indexer_consumer_lag', kind: 'value', by: ['layout'], unit: '' },
  { id: 'freshness', title: 'Freshness: append → searchable', metric: 'baedal_indexer_freshness_seconds', kind: 'quantiles', qs: [0.5, 0.99], by: ['layout'], scale: 1000, unit: 'ms' },
  { id: 'bulk', title: 'Bulk request latency', metric: 'baedal_indexer_bulk_seconds', kind: 'quantiles', qs: [0.5, 0.99], by: ['layout'], scale: 1000, unit: 'ms' },
  { id: 'search', title: 'Search latency', metric: 'baedal_search_seconds', kind: 'quantiles', qs: [0.5, 0.99], by: ['layout'], scale: 1000, unit: 'ms' },
  { id: 'steps', title: 'Search step latency (p50)', metric: 'baedal_search_step_seconds', kind: 'quantiles', qs: [0.5], by: ['layout', 'step'], scale: 1000, unit: 'ms' },
];

export function mount(root, { getJSON }) {
  const problemBox = el('div', { class: 'problem', attrs: { id: 'ops-problem', role: 'alert' } });
  problemBox.hidden = true;
  const grid = el('div', { class: 'ops-grid' });
  root.append(el('p', { class: 'muted', text: `Live from this server's metrics, every ${POLL_MS / 1000} s; rates and percentiles cover the last interval.` }), problemBox, grid);

  const panels = PANELS.map((spec) => {
    const body = el('div', { class: 'chart' });
    const legend = el('ul', { class: 'legend' });
    const box = el('div', { class: 'panel', attrs: { id: 'panel-' + spec.id }, dataset: { state: 'waiting' } },
      el('h3', { text: spec.title }), body, legend);
    grid.append(box);
    return { spec, box, body, legend, series: new Map(), prev: null };
  });

  let timer = null;
  let busy = false;

  async function poll() {
    if (busy || document.visibilityState !== 'visible') return;
    busy = true;
    try {
      const snap = await getJSON('/console/api/ops');
      showProblem(problemBox, null);
      for (const p of panels) update(p, snap);
    } catch (err) {
      showProblem(problemBox, err);
    } finally {
      busy = false;
    }
  }

  function update(p, snap) {
    const family = snap.metrics[p.spec.metric];
    const now = snap.time_ms;
    if (!family || family.series.length === 0) {
      p.prev = null;
      p.box.dataset.state = 'nodata';
      p.body.replaceChildren(el('p', { class: 'nodata', text: `no data: ${p.spec.metric} is not reported by this server yet` }));
      p.legend.replaceChildren();
      return;
    }
    const cur = { time: now, groups: aggregate(family.series, p.spec.by) };
    const points = sample(p.spec, p.prev, cur); // name -> number|null
    p.prev = cur;
    for (const name of Object.keys(points)) {
      if (!p.series.has(name)) p.series.set(name, []);
    }
    for (const [name, pts] of p.series) {
      pts.push({ t: now, v: name in points ? points[name] : null });
      while (pts.length && pts[0].t < now - WINDOW_MS) pts.shift();
    }
    if (p.series.size === 0) {
      p.box.dataset.state = 'waiting';
      p.body.replaceChildren(el('p', { class: 'muted', text: 'waiting for the next sample…' }));
      return;
    }
    p.box.dataset.state = 'data';
    p.body.replaceChildren(lineChart([...p.series], { from: now - WINDOW_MS, to: now, unit: p.spec.unit }));
    p.legend.replaceChildren(...[...p.series].map(([name, pts], i) => {
      const last = pts[pts.length - 1].v;
      return el('li', {}, el('span', { class: 'swatch s' + (i % 8) }), `${name} `,
        el('strong', { text: last == null ? '—' : format(last, p.spec.unit) }));
    }));
  }

  return {
    show() {
      poll();
      timer ??= setInterval(poll, POLL_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}

// aggregate sums the series of a family that share the labels in by.
function aggregate(series, by) {
  const groups = new Map();
  for (const s of series) {
    const key = seriesName(by.map((l) => s.labels[l] ?? '').filter(Boolean));
    const g = groups.get(key) || { value: 0, count: 0, buckets: null };
    g.value += s.value ?? 0;
    g.count += s.count ?? 0;
    if (s.buckets) {
      g.buckets ??= s.buckets.map((b) => ({ le: b.le, count: 0 }));
      s.buckets.forEach((b, i) => { if (g.buckets[i]) g.buckets[i].count += b.count; });
    }
    groups.set(key, g);
  }
  return groups;
}

// seriesName joins label values, leaving out a value the next one already
// starts with ("nested" before the step "nested:query+decision+fetch").
function seriesName(values) {
  const kept = values.filter((v, i) => !(values[i + 1] || '').startsWith(v + ':'));
  return kept.join(' ') || 'all';
}

// sample turns two aggregated polls into one point per chart series.
function sample(spec, prev, cur) {
  const out = {};
  for (const [key, g] of cur.groups) {
    if (spec.kind === 'value') {
      out[key] = g.value;
      continue;
    }
    const before = prev?.groups.get(key);
    if (!before) continue; // a rate needs two polls
    if (spec.kind === 'rate') {
      const dt = (cur.time - prev.time) / 1000;
      out[key] = g.value >= before.value && dt > 0 ? (g.value - before.value) / dt : null;
      continue;
    }
    const n = g.count - before.count;
    for (const q of spec.qs) {
      const name = `${key} p${Math.round(q * 100)}`;
      if (n <= 0 || !g.buckets || !before.buckets) { out[name] = null; continue; }
      const delta = g.buckets.map((b, i) => ({ le: b.le, count: b.count - (before.buckets[i]?.count ?? 0) }));
      const v = bucketQuantile(q, delta, n);
      out[name] = v == null ? null : v * (spec.scale || 1);
    }
  }
  return out;
}

// bucketQuantile is console.BucketQuantile (ops.go) in JavaScript: linear
// interpolation inside the cumulative bucket holding the rank.
export function bucketQuantile(q, buckets, count) {
  if (!count || !buckets.length) return null;
  const rank = q * count;
  const i = buckets.findIndex((b) => b.count >= rank);
  if (i < 0) return buckets[buckets.length - 1].le;
  const lower = i > 0 ? buckets[i - 1].le : 0;
  const below = i > 0 ? buckets[i - 1].count : 0;
  const inBucket = buckets[i].count - below;
  if (inBucket <= 0) return buckets[i].le;
  return lower + (buckets[i].le - lower) * (rank - below) / inBucket;
}

function format(v, unit) {
  const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return v.toFixed(digits) + (unit ? ' ' + unit : '');
}
