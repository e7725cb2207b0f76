// The bench viewer: two real `bench serve` result files opened with the file input are compared
// side by side and charted; a file whose name and label are markup shows them as text.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { desktop, env, launch, open, phone, shot, sleep, unlabelled, xssFired } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// table reads #bench-compare as rows of cell texts.
function table(page) {
  return page.$eval('#bench-compare', (t) => [...t.querySelectorAll('tr')]
    .map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent.trim())));
}

// num reads the first number of a cell ("12.3 ms", "1,234.5").
const num = (s) => Number((String(s).replace(/,/g, '').match(/-?\d+(\.\d+)?(e-?\d+)?/) || [NaN])[0]);

test('bench: two result files compared and charted', async () => {
  const [a, b] = env.benchFiles;
  const results = [a, b].map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  const { page, guard } = await open(browser, env.serve + '/#/bench');
  assert.equal(await page.evaluate(() => document.body.dataset.view), 'bench');
  assert.equal(await page.$eval('#bench-file', (i) => `${i.type} ${i.multiple} ${i.accept}`), 'file true .json');
  const input = await page.$('#bench-file');
  await input.uploadFile(a, b);
  await page.waitForFunction(() => document.querySelectorAll('#bench-list .bench-item').length === 2, { timeout: 5_000 });
  assert.deepEqual(await unlabelled(page), [], 'every control has a label');

  const list = await page.$$eval('#bench-list .bench-item', (items) => items.map((i) => i.textContent));
  for (const [i, f] of [a, b].entries()) {
    const name = path.basename(f);
    assert.ok(list.some((t) => t.includes(name) || t.includes(results[i].label)), `#bench-list does not name ${name}: ${JSON.stringify(list)}`);
  }

  // One column per file (plus the row names), rows for throughput and the latency statistics.
  const rows = await table(page);
  assert.ok(rows.length > 0, '#bench-compare is empty');
  const head = rows[0];
  assert.equal(head.length, 3, `#bench-compare's header is not [metric, file 1, file 2]: ${JSON.stringify(head)}`);
  for (const [i, f] of [a, b].entries()) {
    assert.ok(head[i + 1].includes(path.basename(f)) || head[i + 1].includes(results[i].label),
      `column ${i + 1} is not ${path.basename(f)}: ${JSON.stringify(head)}`);
  }
  const names = rows.map((r) => r[0].toLowerCase());
  for (const m of ['throughput', 'ttft', 'tpot', 'itl', 'e2e']) {
    assert.ok(names.some((n) => n.includes(m)), `#bench-compare has no ${m} row: ${JSON.stringify(names)}`);
  }
  for (const stat of ['mean', 'p50', 'p99']) {
    assert.ok(names.some((n) => n.includes('ttft') && n.includes(stat)) ||
      rows.some((r) => r.join(' ').toLowerCase().includes(stat)), `#bench-compare has no ${stat} row`);
  }
  // The mean TTFT shown is the file's (to the page's rounding).
  const ttft = rows.find((r) => /ttft/i.test(r[0]) && /mean/i.test(r[0]));
  if (ttft) {
    for (const i of [0, 1]) {
      const want = results[i].mean_ttft_ms;
      const got = num(ttft[i + 1]);
      assert.ok(Math.abs(got - want) <= Math.max(0.06, want * 0.02),
        `mean TTFT of ${path.basename([a, b][i])}: page ${ttft[i + 1]}, file ${want}`);
    }
  }

  // The charts: CDFs of TTFT, TPOT and E2E and the ITL histogram, each an SVG with drawn paths.
  const charts = await page.$$eval('#bench-charts svg', (svgs) => svgs.map((s) =>
    [...s.querySelectorAll('path, polyline, rect')].filter((p) =>
      (p.getAttribute('d') || p.getAttribute('points') || p.getAttribute('height') || '').length > 0).length));
  assert.ok(charts.length >= 4, `#bench-charts has ${charts.length} SVG charts (want TTFT, TPOT, E2E CDFs and the ITL histogram)`);
  assert.ok(charts.every((n) => n >= 2), `a chart has no drawn series: ${JSON.stringify(charts)}`);
  const text = (await page.$eval('#bench-charts', (c) => c.textContent)).toLowerCase();
  for (const m of ['ttft', 'tpot', 'e2e', 'itl']) assert.ok(text.includes(m), `#bench-charts has no ${m} chart`);

  // Interactive: each chart takes the keyboard focus, hovering shows values, and a legend entry
  // (a toggle button) hides its series.
  assert.deepEqual(await page.$$eval('#bench-charts svg', (svgs) => svgs.filter((s) => s.tabIndex < 0).length), 0,
    'a chart is not keyboard focusable');
  const first = await page.$('#bench-charts svg');
  const holder = await first.evaluateHandle((s) => s.parentElement);
  const quiet = await holder.evaluate((h) => h.innerText);
  await first.hover(); // scrolled into view, the pointer on its middle
  await sleep(200);
  const hovered = await holder.evaluate((h) => h.innerText);
  assert.ok(hovered !== quiet && /\d/.test(hovered), 'hovering a chart shows no values');
  await page.mouse.move(0, 0);
  const drawn = (h) => h.evaluate((x) => [...x.querySelectorAll('svg path')]
    .filter((p) => (p.getAttribute('d') || '').split(/[MLHVCSQTAZ]/i).length > 3).length);
  const chart = await page.evaluateHandle(() => document.querySelector('#bench-charts [aria-pressed="true"]')
    ?.closest('#bench-charts > *'));
  const toggle = await page.$('#bench-charts [aria-pressed="true"]');
  assert.ok(toggle, 'no legend entry (a button with aria-pressed) in #bench-charts');
  const shownBefore = await drawn(chart);
  await toggle.click();
  assert.equal(await toggle.evaluate((b) => b.getAttribute('aria-pressed')), 'false');
  assert.ok(await drawn(chart) < shownBefore, 'a legend click hid no series');
  await toggle.click();
  assert.equal(await drawn(chart), shownBefore, 'a second legend click did not show the series again');

  await shot(page, 'bench-desktop', desktop);
  await shot(page, 'bench-phone', phone);
  guard.check();
  await page.close();
});

test('bench: a file name and a label of markup show as text', async () => {
  const { page, guard } = await open(browser, env.serve + '/#/bench');
  const input = await page.$('#bench-file');
  await input.uploadFile(env.benchXSS);
  await page.waitForFunction(() => document.querySelectorAll('#bench-list .bench-item').length === 1, { timeout: 5_000 });
  await sleep(300);
  const name = path.basename(env.benchXSS);
  const label = JSON.parse(fs.readFileSync(env.benchXSS, 'utf8')).label;
  assert.ok(name.includes('<img') && label.includes('<script>'), `the fixture is not markup: ${name} ${label}`);
  const shown = await page.$eval('#bench-list', (l) => l.textContent);
  assert.ok(shown.includes(name) || shown.includes(label), `#bench-list shows neither the name nor the label literally: ${JSON.stringify(shown)}`);
  const all = await page.evaluate(() => document.body.textContent);
  assert.ok(all.includes(name) || all.includes(label));
  assert.deepEqual(await xssFired(page), { flag: 'unset', imgs: 0, scripts: 0 }, 'markup in a bench file ran');
  guard.check();
  await page.close();
});
