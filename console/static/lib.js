// Shared helpers of the console's views: DOM building, JSON requests that
// turn RFC 9457 problem bodies into errors, and showing those errors.

// el builds an element. props: class, text, dataset, attrs, on (events);
// children: nodes or strings (strings become text nodes, never HTML).
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = String(props.text);
  for (const [k, v] of Object.entries(props.dataset || {})) node.dataset[k] = v;
  for (const [k, v] of Object.entries(props.attrs || {})) node.setAttribute(k, v);
  for (const [k, v] of Object.entries(props.on || {})) node.addEventListener(k, v);
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// svg builds an SVG element with attributes.
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

// ProblemError is a failed API request, carrying the problem body.
export class ProblemError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// The admin token, entered in the page header, lives only in this
// module's memory: never in localStorage, sessionStorage, a cookie or the
// URL, so a reload or a new tab forgets it.
let adminToken = '';

// setAdminToken replaces the token sent with admin requests.
export function setAdminToken(token) { adminToken = String(token || '').trim(); }

// hasAdminToken reports whether a token was entered.
export function hasAdminToken() { return adminToken !== ''; }

// getJSON fetches url and returns its JSON body, or throws a ProblemError
// (an API error, or a network failure as a problem of status 0).
export async function getJSON(url, signal) {
  return requestJSON('GET', url, { signal });
}

// requestJSON sends method to url with an optional JSON body; admin adds
// the admin token (Authorization: Bearer). It returns the JSON body (null
// for 204) or throws a ProblemError, as getJSON.
export async function requestJSON(method, url, { body, admin = false, signal } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (admin) headers.Authorization = 'Bearer ' + adminToken;
  let resp;
  try {
    resp = await fetch(url, { method, signal, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ProblemError(0, { title: 'server unreachable', detail: `${url}: ${err.message}` });
  }
  const type = resp.headers.get('Content-Type') || '';
  const answer = type.includes('json') ? await resp.json().catch(() => null) : null;
  if (!resp.ok) {
    throw new ProblemError(resp.status, answer || { title: `HTTP ${resp.status}`, detail: `${url} answered ${resp.status} ${resp.statusText}` });
  }
  return answer;
}

// showProblem renders err into box in words: title, detail, the field at
// fault and the values it allows. A falsy err hides the box.
export function showProblem(box, err) {
  box.replaceChildren();
  box.hidden = !err;
  if (!err) return;
  const p = err.problem || { title: 'error', detail: String(err.message || err) };
  const status = err.status ? ` (${err.status})` : '';
  box.append(el('strong', { text: (p.title || 'error') + status }));
  if (p.detail) box.append(el('span', { class: 'detail', text: p.detail }));
  if (p.field) box.append(el('span', { class: 'field' }, 'field: ', el('code', { text: p.field })));
  if (p.allowed && p.allowed.length) {
    box.append(el('span', { class: 'allowed' }, 'allowed: ', ...p.allowed.flatMap((a, i) => [i ? ', ' : '', el('code', { text: a })])));
  }
}

// highlighted turns an OpenSearch highlight fragment into nodes: the text
// between <em> and </em> becomes an <em> element, everything else text.
// Nothing in the fragment is ever parsed as HTML.
export function highlighted(fragment) {
  const out = [];
  let inEm = false;
  for (const part of String(fragment).split(/(<em>|<\/em>)/)) {
    if (part === '<em>') { inEm = true; continue; }
    if (part === '</em>') { inEm = false; continue; }
    if (part) out.push(inEm ? el('em', { text: part }) : document.createTextNode(part));
  }
  return out;
}
