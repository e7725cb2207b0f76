// chart.js: the console's one chart, a hand-written SVG line chart. It draws several series of
// (x, y) points (as lines or as steps, for CDFs and histograms) with ticked axes, a legend whose
// buttons hide and show a series, and a cursor that hover or the arrow keys move, showing every
// visible series' value at that x in a tooltip (mirrored to a live region for screen readers).

const NS = 'http://www.w3.org/2000/svg';
const M = { left: 58, right: 14, top: 10, bottom: 36 };

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** ticks returns about n round values covering [lo, hi] and the bounds rounded out to them. */
export function ticks(lo, hi, n = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = 0; hi = 1; }
  if (hi - lo < 1e-12) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  const step = (f >= 7.5 ? 10 : f >= 3.5 ? 5 : f >= 1.5 ? 2 : 1) * mag;
  const a = Math.floor(lo / step + 1e-9) * step;
  const b = Math.ceil(hi / step - 1e-9) * step;
  const out = [];
  for (let v = a; v <= b + step * 1e-6; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return { lo: a, hi: b, ticks: out, step };
}

/** logTicks returns 1, 2 and 5 times the powers of ten in [lo, hi] (only the powers when the
 * range spans many decades), for a logarithmic axis. */
export function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
    }
  }
  const ticksOut = out.length > 8 ? out.filter((v) => Math.abs(Math.log10(v) % 1) < 1e-9) : out;
  return { lo, hi, ticks: ticksOut };
}

/** defaultFormat writes a tick or value compactly. */
export function defaultFormat(v) {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 1e6) return (v / 1e6).toPrecision(3).replace(/\.?0+$/, '') + 'M';
  if (a >= 1e4) return (v / 1e3).toPrecision(3).replace(/\.?0+$/, '') + 'k';
  if (a >= 1) return String(Math.round(v * 100) / 100);
  if (a >= 1e-3) return v.toPrecision(3).replace(/\.?0+$/, '');
  return v.toExponential(1).replace('.0e', 'e');
}

/** timeFormat writes unix seconds as hh:mm:ss in local time. */
export function timeFormat(sec) {
  return new Date(sec * 1000).toLocaleTimeString([], { hour12: false });
}

function nearest(points, x) {
  let lo = 0, hi = points.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] < x) lo = mid + 1; else hi = mid;
  }
  if (lo > 0 && Math.abs(points[lo - 1][0] - x) <= Math.abs(points[lo][0] - x)) lo--;
  return lo;
}

// thin keeps at most max points of a sorted series (every k-th and the last) for drawing.
function thin(points, max = 800) {
  if (points.length <= max) return points;
  const k = Math.ceil(points.length / max);
  const out = points.filter((_, i) => i % k === 0);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]);
  return out;
}

/**
 * Chart draws into container. opts: label (the accessible name), xLabel, yLabel, xFormat and
 * yFormat (value -> string), yMin/yMax/xMin/xMax (fixed bounds), step (draw as steps), xLog (a
 * logarithmic x axis; points at x <= 0 are left out),
 * height (viewBox height, default 240), empty (text when there is no data).
 */
export class Chart {
  constructor(container, opts = {}) {
    this.opts = { height: 240, xFormat: defaultFormat, yFormat: defaultFormat, empty: 'No data yet.', ...opts };
    this.hidden = new Set();
    this.series = [];
    this.cursor = -1; // index into this.xs while the keyboard or the pointer holds the cursor
    this.box = container;
    container.replaceChildren();
    this.svg = svg('svg', { tabindex: 0, role: 'img', 'aria-roledescription': 'chart',
      'aria-label': `${this.opts.label || 'chart'}. Arrow keys move the cursor through the values.` });
    this.tip = document.createElement('div');
    this.tip.className = 'tooltip';
    this.tip.hidden = true;
    this.live = document.createElement('div');
    this.live.className = 'sr-only';
    this.live.setAttribute('aria-live', 'polite');
    this.legend = document.createElement('div');
    this.legend.className = 'legend';
    this.legend.setAttribute('role', 'group');
    this.legend.setAttribute('aria-label', `${this.opts.label || 'chart'}: series`);
    container.append(this.svg, this.tip, this.live, this.legend);
    this.svg.addEventListener('pointermove', (e) => this.pointer(e));
    this.svg.addEventListener('pointerleave', () => this.hideCursor());
    this.svg.addEventListener('keydown', (e) => this.key(e));
    this.svg.addEventListener('blur', () => this.hideCursor());
    // The viewBox follows the container's width, so text keeps its size on a phone; a hidden
    // view has width 0 and is drawn again when it shows.
    this.W = 600;
    new ResizeObserver(() => {
      const w = Math.round(this.box.clientWidth);
      // Drawn in the next frame, not in the callback: the new height would otherwise be an
      // observation the browser reports as a "ResizeObserver loop" error.
      if (w > 0 && Math.abs(w - this.W) > 2) requestAnimationFrame(() => { this.W = Math.max(260, w); this.draw(); });
    }).observe(container);
  }

  /** setData replaces the series: [{name, points: [[x, y], ...] sorted by x}]. */
  setData(series) {
    const names = series.map((s) => s.name).join('\u0000');
    const changed = names !== this.series.map((s) => s.name).join('\u0000');
    const ok = (p) => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!this.opts.xLog || p[0] > 0);
    this.series = series.map((s, i) => ({ ...s, idx: i, points: s.points.filter(ok) }));
    if (changed) this.drawLegend();
    this.draw();
  }

  drawLegend() {
    this.legend.replaceChildren();
    if (this.series.length < 2 && !this.opts.alwaysLegend) return;
    for (const s of this.series) {
      const b = document.createElement('button');
      b.type = 'button';
      b.setAttribute('aria-pressed', String(!this.hidden.has(s.name)));
      b.dataset.series = s.name;
      const sw = document.createElement('span');
      sw.className = `swatch sw${s.idx % 6}`;
      b.append(sw, document.createTextNode(s.name));
      b.addEventListener('click', () => {
        if (this.hidden.has(s.name)) this.hidden.delete(s.name); else this.hidden.add(s.name);
        b.setAttribute('aria-pressed', String(!this.hidden.has(s.name)));
        this.draw();
      });
      this.legend.append(b);
    }
  }

  visible() {
    return this.series.filter((s) => !this.hidden.has(s.name) && s.points.length);
  }

  draw() {
    const o = this.opts, W = this.W;
    const H = Math.round(Math.min(o.height, Math.max(180, W * 0.6)));
    this.H = H;
    this.svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const vis = this.visible();
    this.svg.replaceChildren();
    const pw = W - M.left - M.right, ph = H - M.top - M.bottom;
    if (!vis.length) {
      this.svg.append(svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty' },
        this.series.some((s) => s.points.length) ? 'Every series is hidden.' : o.empty));
      this.xs = [];
      this.tip.hidden = true;
      return;
    }
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const s of vis) for (const [x, y] of s.points) {
      if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
    }
    if (o.xMin !== undefined) x0 = o.xMin;
    if (o.xMax !== undefined) x1 = Math.max(o.xMax, x0);
    if (o.yMin !== undefined) y0 = Math.min(o.yMin, y0);
    if (o.yMax !== undefined) y1 = Math.max(o.yMax, y1);
    // A flat series at a fixed lower bound (tokens/s of an idle replica: all 0) grows upwards only.
    if (o.yMin !== undefined && y1 - y0 < 1e-12) y1 = y0 + (Math.abs(y0) * 0.1 || 1);
    if (x1 <= x0) x1 = o.xLog ? x0 * 10 : x0 + 1;
    const yt = ticks(y0, y1, 4);
    const xt = o.xTicks ? o.xTicks(x0, x1) : o.xLog ? logTicks(x0, x1) : ticks(x0, x1, 5);
    const xl = o.xTight === false ? xt.lo : x0, xh = o.xTight === false ? xt.hi : x1;
    const T = o.xLog ? Math.log10 : (x) => x;
    const sx = (x) => M.left + ((T(x) - T(xl)) / (T(xh) - T(xl) || 1)) * pw;
    const sy = (y) => M.top + ph - ((y - yt.lo) / (yt.hi - yt.lo || 1)) * ph;
    this.scale = { sx, sy, xl, xh, pw, T };

    const g = svg('g');
    for (const v of yt.ticks) {
      const y = sy(v);
      g.append(svg('line', { x1: M.left, x2: M.left + pw, y1: y, y2: y, class: 'gridline' }));
      g.append(svg('text', { x: M.left - 6, y: y + 4, 'text-anchor': 'end', class: 'tick' }, o.yFormat(v)));
    }
    for (const v of xt.ticks) {
      if (v < xl - 1e-9 || v > xh + 1e-9) continue;
      const x = sx(v);
      g.append(svg('line', { x1: x, x2: x, y1: M.top + ph, y2: M.top + ph + 4, class: 'axis' }));
      g.append(svg('text', { x, y: M.top + ph + 16, 'text-anchor': 'middle', class: 'tick' }, o.xFormat(v)));
    }
    g.append(svg('line', { x1: M.left, x2: M.left + pw, y1: M.top + ph, y2: M.top + ph, class: 'axis' }));
    g.append(svg('line', { x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph, class: 'axis' }));
    if (o.xLabel) g.append(svg('text', { x: M.left + pw / 2, y: H - 4, 'text-anchor': 'middle', class: 'label' }, o.xLabel));
    if (o.yLabel) g.append(svg('text', { x: 12, y: M.top + ph / 2, 'text-anchor': 'middle', class: 'label', transform: `rotate(-90 12 ${M.top + ph / 2})` }, o.yLabel));
    this.svg.append(g);

    for (const s of vis) {
      const pts = thin(s.points);
      let d = '';
      pts.forEach(([x, y], i) => {
        const X = sx(x).toFixed(1), Y = sy(y).toFixed(1);
        if (i === 0) d += `M${X} ${Y}`;
        else if (o.step) d += `H${X}V${Y}`;
        else d += `L${X} ${Y}`;
      });
      if (pts.length === 1) d += `h1`;
      this.svg.append(svg('path', { d, class: `line s${s.idx % 6}`, 'data-series': s.name }));
    }
    // The cursor's x values: the union of the visible series' x, sorted.
    const set = new Set();
    for (const s of vis) for (const p of s.points) set.add(p[0]);
    this.xs = [...set].sort((a, b) => a - b);
    this.cursorLayer = svg('g');
    this.svg.append(this.cursorLayer);
    if (this.cursor >= 0) {
      if (this.cursorX !== undefined) this.cursor = nearest(this.xs.map((x) => [x]), this.cursorX);
      this.showCursor();
    }
  }

  pointer(e) {
    if (!this.xs || !this.xs.length) return;
    const r = this.svg.getBoundingClientRect();
    const vx = ((e.clientX - r.left) / r.width) * this.W;
    const { xl, xh, pw, T } = this.scale;
    const t = T(xl) + ((vx - M.left) / pw) * (T(xh) - T(xl));
    const x = this.opts.xLog ? 10 ** t : t;
    this.cursor = nearest(this.xs.map((v) => [v]), x);
    this.cursorX = this.xs[this.cursor];
    this.showCursor();
  }

  key(e) {
    if (!this.xs || !this.xs.length) return;
    const n = this.xs.length;
    const big = Math.max(1, Math.round(n / 10));
    let i = this.cursor < 0 ? -1 : this.cursor;
    switch (e.key) {
      case 'ArrowRight': i = i < 0 ? 0 : Math.min(n - 1, i + 1); break;
      case 'ArrowLeft': i = i < 0 ? n - 1 : Math.max(0, i - 1); break;
      case 'PageUp': i = Math.min(n - 1, Math.max(0, i) + big); break;
      case 'PageDown': i = Math.max(0, i - big); break;
      case 'Home': i = 0; break;
      case 'End': i = n - 1; break;
      case 'Escape': this.hideCursor(); return;
      default: return;
    }
    e.preventDefault();
    this.cursor = i;
    this.cursorX = this.xs[i];
    this.showCursor(true);
  }

  showCursor(announce) {
    const x = this.xs[this.cursor];
    if (x === undefined) return;
    const { sx, sy } = this.scale;
    const o = this.opts, H = this.H, W = this.W;
    this.cursorLayer.replaceChildren(svg('line', { x1: sx(x), x2: sx(x), y1: M.top, y2: H - M.bottom, class: 'cursor' }));
    const lines = [`${o.xName || o.xLabel || 'x'}: ${o.xFormat(x)}`];
    for (const s of this.visible()) {
      const i = nearest(s.points, x);
      // A step series holds its value until its next point: read the last point at or before x.
      let j = i;
      if (o.step && s.points[j][0] > x) {
        if (j === 0) continue; // the series starts right of the cursor
        j--;
      }
      const [px, py] = s.points[j];
      if (!o.step && Math.abs(sx(px) - sx(x)) > this.scale.pw * 0.02 && s.points.length > 1) continue;
      this.cursorLayer.append(svg('circle', { cx: sx(o.step ? x : px), cy: sy(py), r: 3.5, class: `dot s${s.idx % 6}` }));
      lines.push(`${s.name}: ${o.yFormat(py)}`);
    }
    this.tip.replaceChildren();
    for (const l of lines) {
      const d = document.createElement('div');
      d.textContent = l;
      this.tip.append(d);
    }
    this.tip.hidden = false;
    const r = this.svg.getBoundingClientRect();
    const px = (sx(x) / W) * r.width;
    const tw = this.tip.offsetWidth;
    const left = px > r.width / 2 ? px - tw - 10 : px + 10;
    // Kept inside the chart, so a tooltip never widens the page on a phone.
    this.tip.style.left = Math.max(0, Math.min(left, r.width - tw)) + 'px';
    this.tip.style.top = '4px';
    if (announce) this.live.textContent = lines.join(', ');
  }

  hideCursor() {
    this.cursor = -1;
    this.cursorX = undefined;
    this.tip.hidden = true;
    if (this.cursorLayer) this.cursorLayer.replaceChildren();
  }
}
