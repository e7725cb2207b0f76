// `llmcloud serve --api-key`: the page and its assets load without the key, the first API call's
// 401 opens #api-key-dialog, and once the key is entered every API call carries it (also after a
// reload, from sessionStorage, and from the cloud view).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { env, launch, open, view } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const isAPI = (url) => /^\/(v1\/|metrics$|console\/api\/)/.test(new URL(url).pathname);

test('api key: asked for on the first 401, then sent on every call', async () => {
  const browserCtx = await browser.createBrowserContext();
  // The first API call answers 401 (and Chromium logs it as a failed resource): allowed once.
  const { page, guard } = await open(browserCtx, env.serveKey + '/', {
    before: (g) => {
      g.allow('the first 401', (kind, d) => kind === 'response' && d.startsWith('401 '));
      g.allow("Chromium's log of the first 401", (kind, d) => kind === 'console.error' && d.includes('401'));
    },
  });
  const calls = [];
  page.on('request', (req) => { if (isAPI(req.url())) calls.push({ url: req.url(), auth: req.headers().authorization }); });

  await page.waitForFunction(() => {
    const d = document.querySelector('#api-key-dialog');
    return d && (d.open === true || (d.getClientRects().length > 0 && getComputedStyle(d).visibility !== 'hidden'));
  }, { timeout: 10_000 });
  assert.equal(await page.$eval('#api-key', (i) => i.labels.length > 0 || !!i.getAttribute('aria-label')), true, '#api-key has no label');
  await page.type('#api-key', env.apiKey);
  const saved = calls.length;
  await page.click('#api-key-save');
  for (const a of guard.allowances) guard.revoke(a);

  // The call that failed is made again with the key: the model list fills.
  await page.waitForFunction(() => [...document.querySelectorAll('#chat-model option')]
    .some((o) => o.value === 'llmcloud-default'), { timeout: 10_000 });
  await page.$eval('#chat-input', (el) => { el.value = 'Hello there.'; el.dispatchEvent(new Event('input', { bubbles: true })); });
  await page.click('#chat-send');
  await page.waitForFunction(() => document.body.dataset.chat === 'idle' &&
    document.querySelectorAll('#chat-messages .msg.msg-assistant').length === 1 &&
    document.querySelector('#chat-messages .msg.msg-assistant .msg-text').textContent.length > 0, { timeout: 20_000 });

  // A reload keeps the key (sessionStorage): no dialog, and the calls carry it.
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => [...document.querySelectorAll('#chat-model option')]
    .some((o) => o.value === 'llmcloud-default'), { timeout: 10_000 });
  const dialog = await page.$eval('#api-key-dialog', (d) => d.open === true ||
    (d.getClientRects().length > 0 && getComputedStyle(d).visibility !== 'hidden')).catch(() => false);
  assert.equal(dialog, false, '#api-key-dialog shown again after a reload');

  // The cloud view's polls carry it too.
  await view(page, 'cloud');
  await page.waitForFunction(() => document.querySelectorAll('#cloud-replicas tr[data-replica]').length === 1, { timeout: 10_000 });

  const after = calls.slice(saved);
  assert.ok(after.length >= 4, `only ${after.length} API calls after the key was entered: ${JSON.stringify(after)}`);
  const paths = new Set(after.map((c) => new URL(c.url).pathname));
  for (const p of ['/v1/models', '/v1/chat/completions', '/console/api/cloud']) assert.ok(paths.has(p), `no ${p} call seen: ${[...paths]}`);
  const bare = after.filter((c) => c.auth !== `Bearer ${env.apiKey}`);
  assert.deepEqual(bare, [], 'API calls without the key after it was entered');
  guard.check();
  await browserCtx.close();
});
