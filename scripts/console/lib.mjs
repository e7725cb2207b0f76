// Shared helpers of the console's browser tests: Chromium through puppeteer-core, a guard that
// fails a page on any console error, uncaught exception, failed request or HTTP error, and the
// screenshots written to docs/console/ when CONSOLE_SCREENSHOTS=1.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

/** The processes run.sh started, as URLs and paths. */
export const env = {
  serve: need('CONSOLE_SERVE_URL'),
  serveKey: need('CONSOLE_SERVEKEY_URL'),
  apiKey: need('CONSOLE_API_KEY'),
  up: need('CONSOLE_UP_URL'),
  router: need('CONSOLE_ROUTER_URL'),
  upHealthInterval: Number(process.env.CONSOLE_UP_HEALTH_INTERVAL_S || 1),
  ui: need('CONSOLE_UI_URL'),
  runDir: need('CONSOLE_RUN_DIR'),
  benchFiles: need('CONSOLE_BENCH_FILES').split(':'),
  benchXSS: need('CONSOLE_BENCH_XSS'),
  docsDir: process.env.CONSOLE_DOCS_DIR || '',
  screenshots: process.env.CONSOLE_SCREENSHOTS === '1',
};

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with scripts/console/run.sh`);
  return v;
}

/** The markup of the escaping tests: run, it sets window.__xss. */
export const XSS = `<img src=x onerror="window.__xss=1"> <script>window.__xss=1</script>`;

export const desktop = { width: 1280, height: 900 };
export const phone = { width: 390, height: 844 };

/** launch starts headless Chromium (no sandbox as root: it refuses to run otherwise). */
export async function launch() {
  const args = ['--disable-dev-shm-usage', '--hide-scrollbars', '--font-render-hinting=none'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args,
    defaultViewport: { ...desktop, deviceScaleFactor: 1 },
    protocolTimeout: 60_000,
  });
}

/**
 * open makes a page in a light colour scheme, attaches the guard and loads url.
 * The guard collects every console error, page error, failed request and response >= 400;
 * guard.check() fails the test if any was not allowed with guard.allow(...); before(guard) runs
 * before the page loads (to allow what its first calls do).
 */
export async function open(browser, url, { scheme = 'light', viewport = desktop, before } = {}) {
  const page = await browser.newPage();
  await page.setViewport({ ...viewport, deviceScaleFactor: 1 });
  await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
  const guard = new Guard(page);
  if (before) before(guard);
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body && document.body.dataset.view, { timeout: 10_000 });
  return { page, guard };
}

/** Guard records what goes wrong in a page. */
export class Guard {
  constructor(page) {
    this.page = page;
    this.problems = [];
    this.allowances = []; // {what, match(kind, detail) -> bool, left}
    page.on('console', (msg) => {
      if (msg.type() === 'error') {
        const loc = msg.location();
        this.add('console.error', `${msg.text()}${loc && loc.url ? ` (${loc.url})` : ''}`);
      }
    });
    page.on('pageerror', (err) => this.add('pageerror', String(err && err.stack ? err.stack : err)));
    page.on('requestfailed', (req) => {
      const f = req.failure();
      this.add('requestfailed', `${req.method()} ${req.url()}: ${f ? f.errorText : '?'}`);
    });
    page.on('response', (res) => {
      if (res.status() >= 400) this.add('response', `${res.status()} ${res.request().method()} ${res.url()}`);
    });
  }

  add(kind, detail) {
    for (const a of this.allowances) {
      if (a.left > 0 && a.match(kind, detail)) {
        a.left--;
        a.used++;
        return;
      }
    }
    this.problems.push(`${kind}: ${detail}`);
  }

  /** allow lets count problems matching match(kind, detail) pass (what names them). */
  allow(what, match, count = 1) {
    const a = { what, match, left: count, used: 0 };
    this.allowances.push(a);
    return a;
  }

  /**
   * settle waits (at most ms) until an allowance has been used up: the browser reports an
   * aborted request some time after the page has moved on, so revoking at once can turn the
   * allowed event into a failure.
   */
  async settle(a, ms = 3_000) {
    for (const end = Date.now() + ms; a.left > 0 && Date.now() < end;) await sleep(20);
  }

  /** revoke ends an allowance (what it did not use is no longer allowed). */
  revoke(a) {
    a.left = 0;
  }

  check() {
    assert.deepEqual(this.problems, [], `the page had errors:\n${this.problems.join('\n')}`);
  }
}

/** view switches to a view through its nav link and waits for body[data-view]. */
export async function view(page, name) {
  await page.click(`nav a[href="#/${name}"]`);
  await page.waitForFunction((n) => document.body.dataset.view === n, { timeout: 5_000 }, name);
}

/**
 * shot writes docs/console/NAME.png when CONSOLE_SCREENSHOTS=1, at the given viewport (the
 * viewport is restored after). It also checks, at any width, that the view does not scroll
 * sideways (the page must work at 390 px). prepare(page) runs after the resize.
 */
export async function shot(page, name, viewport, prepare) {
  const before = page.viewport();
  await page.setViewport({ ...viewport, deviceScaleFactor: 1 });
  await settle(page);
  if (prepare) await prepare(page);
  const overflow = await page.evaluate(() => {
    const d = document.documentElement;
    return { scroll: d.scrollWidth, client: d.clientWidth };
  });
  assert.ok(overflow.scroll <= overflow.client + 1,
    `${name}: the page scrolls sideways at ${viewport.width} px (scrollWidth ${overflow.scroll} > ${overflow.client})`);
  if (env.screenshots && env.docsDir) {
    fs.mkdirSync(env.docsDir, { recursive: true });
    await page.evaluate(() => { document.activeElement?.blur(); window.scrollTo(0, 0); });
    await settle(page);
    // At desktop width the whole view (its charts are below the fold); at phone width one screen.
    await page.screenshot({ path: path.join(env.docsDir, `${name}.png`), type: 'png', fullPage: viewport.width >= 1000 });
  }
  await page.setViewport(before);
}

/** settle waits two animation frames (layout and paint after a change). */
export async function settle(page) {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** unlabelled lists the form controls that have no label (the contract: every control labelled). */
export async function unlabelled(page) {
  return page.evaluate(() => {
    const bad = [];
    for (const el of document.querySelectorAll('input, select, textarea, button')) {
      if (el.type === 'hidden') continue;
      const named = (el.labels && el.labels.length > 0) || el.getAttribute('aria-label') ||
        el.getAttribute('aria-labelledby') || el.getAttribute('title') ||
        (el.tagName === 'BUTTON' && el.textContent.trim() !== '');
      if (!named) bad.push(el.outerHTML.slice(0, 120));
    }
    return bad;
  });
}

/** xssFired reports whether markup in data ran or became elements. */
export async function xssFired(page) {
  return page.evaluate(() => ({
    flag: typeof window.__xss === 'undefined' ? 'unset' : String(window.__xss),
    imgs: document.querySelectorAll('img[src="x"]').length,
    scripts: [...document.querySelectorAll('script')].filter((s) => s.textContent.includes('__xss')).length,
  }));
}

/** sleep waits ms milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** getJSON fetches url from the test process (not the page) and parses the body. */
export async function getJSON(url, headers = {}) {
  const res = await fetch(url, { headers });
  assert.equal(res.status, 200, `GET ${url}: ${res.status}`);
  return res.json();
}
