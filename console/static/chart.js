// A small SVG line chart drawn without libraries: time on x, values on y
// from 0, one polyline per series (gaps where a point is null), three
// labelled grid lines. Colours come from console.css classes s0..s7.
import { svg } from './lib.js';

const W = 480, H = 150, PAD_L = 44, PAD_B = 16, PAD_T = 8;

// lineChart draws series ([name, [{t, v}]]) between times from and to.
export function lineChart(series, { from, to, unit }) {
  let max = 0;
  for (const [, pts] of series) for (const p of pts) if (p.v != null && p.v > max) max = p.v;
  max = niceCeil(max || 1);
  const x = (t) => PAD_L + ((t - from) / (to - from)) * (W - PAD_L - 4);
  const y = (v) => PAD_T + (1 - v / max) * (H - PAD_T - PAD_B);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'line-chart', role: 'img' });
  for (const f of [0, 0.5, 1]) {
    const v = max * f;
    root.append(svg('line', { x1: PAD_L, x2: W - 4, y1: y(v), y2: y(v), class: 'grid' }));
    root.append(svg('text', { x: PAD_L - 4, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' }, document.createTextNode(short(v) + (f === 1 && unit ? ' ' + unit : ''))));
  }
  root.append(svg('text', { x: PAD_L, y: H - 2, class: 'axis' }, document.createTextNode(`${Math.round((to - from) / 60000)} min ago`)));
  root.append(svg('text', { x: W - 4, y: H - 2, class: 'axis', 'text-anchor': 'end' }, document.createTextNode('now')));
  series.forEach(([, pts], i) => {
    let d = '';
    let pen = false;
    for (const p of pts) {
      if (p.v == null) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`;
      pen = true;
    }
    if (d) root.append(svg('path', { d, class: 'series s' + (i % 8) }));
    const last = pts.findLast((p) => p.v != null);
    if (last) root.append(svg('circle', { cx: x(last.t), cy: y(last.v), r: 2.5, class: 'dot s' + (i % 8) }));
  });
  return root;
}

function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function short(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (v >= 1e3) return (v / 1e3).toFixed(1) + 'k';
  return v >= 10 || v === 0 ? String(Math.round(v)) : v.toFixed(1);
}
