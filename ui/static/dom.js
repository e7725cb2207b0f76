// dom.js: building elements without HTML strings. Every text goes through textContent, so
// model output, file names and replica names show literally and never run.

/**
 * el creates an element: el('td', {class: 'num', dataset: {replica: name}}, 'text', child...).
 * Attributes are set with setAttribute; children are strings (text nodes) or nodes.
 */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

/** clear removes every child of e. */
export function clear(e) {
  e.replaceChildren();
}

/** fmt formats a number with d decimals, or "–" when it is missing. */
export function fmt(x, d = 1) {
  if (x === null || x === undefined || Number.isNaN(x) || !Number.isFinite(Number(x))) return '–';
  return Number(x).toFixed(d);
}

/** fmtNum formats a number compactly: 1234567 -> "1.23M", 0.000123 -> "1.23e-4". */
export function fmtNum(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  const a = Math.abs(x);
  if (a === 0) return '0';
  if (a >= 1e9) return (x / 1e9).toFixed(2) + 'G';
  if (a >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (a >= 1e4) return (x / 1e3).toFixed(1) + 'k';
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 0.01) return x.toFixed(3).replace(/\.?0+$/, '');
  return x.toExponential(2);
}

/** download saves text as a file named name. */
export function download(name, text, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
