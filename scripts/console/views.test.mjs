// Every view is reachable in every mode (serve, router, up, `llmcloud ui RUN`) through the nav links,
// with the landmarks in place and without a failed request: a view whose endpoint the process
// lacks says so instead of calling it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { env, launch, open, sleep, view } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const modes = [
  { mode: 'serve', url: () => env.serve, first: 'chat' },
  { mode: 'up', url: () => env.up, first: 'cloud' },
  { mode: 'router', url: () => env.router, first: 'cloud' },
  { mode: 'train', url: () => env.ui, first: 'train' },
];

for (const m of modes) {
  test(`views: all four in ${m.mode} mode`, async () => {
    const { page, guard } = await open(browser, m.url() + '/');
    const paths = [];
    page.on('request', (req) => paths.push(new URL(req.url()).pathname));
    assert.equal(await page.$eval('meta[name="llmcloud-mode"]', (e) => e.content), m.mode);
    assert.equal(await page.evaluate(() => document.body.dataset.view), m.first);
    assert.deepEqual(await page.evaluate(() => ['header', 'nav', 'main'].filter((s) => !document.querySelector(s))), [],
      'missing landmarks');
    for (const v of ['chat', 'cloud', 'bench', 'train', m.first]) {
      await view(page, v);
      assert.equal(await page.evaluate(() => location.hash), `#/${v}`);
      await sleep(1_200); // a poll of the view, if it makes any
    }
    // A hash route loads its view directly.
    await page.goto(m.url() + '/#/bench', { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.view === 'bench', { timeout: 5_000 });
    if (m.mode !== 'train') assert.ok(!paths.includes('/console/api/run'), `${m.mode} mode fetched /console/api/run`);
    if (m.mode === 'train') {
      const api = paths.filter((p) => p.startsWith('/v1/') || p === '/console/api/cloud' || p === '/console/api/requests');
      assert.deepEqual(api, [], 'train mode called serving endpoints it does not have');
    }
    guard.check();
    await page.close();
  });
}
