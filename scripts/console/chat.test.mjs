// The playground against `llmcloud serve` on the built-in model: a streamed reply grows on the
// page, Stop keeps the partial text and leaves the server healthy, a second message works, the
// sampling parameters reach the request, the export holds the conversation, and markup in a system prompt, a user message and a
// model output shows as text.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { desktop, env, getJSON, launch, open, phone, settle, shot, sleep, unlabelled, XSS, xssFired } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// state reads what the tests watch: the chat state, the last reply's text and classes.
async function state(page) {
  return page.evaluate(() => {
    const msgs = document.querySelectorAll('#chat-messages .msg.msg-assistant');
    const last = msgs[msgs.length - 1];
    const stop = document.querySelector('#chat-stop');
    return {
      chat: document.body.dataset.chat,
      n: msgs.length,
      users: document.querySelectorAll('#chat-messages .msg.msg-user').length,
      text: last ? (last.querySelector('.msg-text')?.textContent ?? '') : '',
      stats: last ? (last.querySelector('.msg-stats')?.textContent ?? '') : '',
      stopped: last ? last.classList.contains('msg-stopped') : false,
      stopEnabled: stop ? !stop.disabled : null,
    };
  });
}

async function setValue(page, sel, value) {
  await page.$eval(sel, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
}

async function waitIdle(page, n, timeout = 20_000) {
  await page.waitForFunction((n) => document.body.dataset.chat === 'idle' &&
    document.querySelectorAll('#chat-messages .msg.msg-assistant').length === n, { timeout }, n);
}

test('chat: stream, stop midway, second message, parameters, screenshots', async () => {
  const { page, guard } = await open(browser, env.serve + '/');
  assert.equal(await page.$eval('meta[name="llmcloud-mode"]', (m) => m.content), 'serve');
  assert.equal(await page.evaluate(() => document.body.dataset.view), 'chat', 'serve opens on the chat view');
  assert.equal(await page.evaluate(() => document.body.dataset.chat), 'idle');
  assert.deepEqual(await unlabelled(page), [], 'every control has a label');

  // The model list comes from GET /v1/models.
  await page.waitForFunction(() => [...document.querySelectorAll('#chat-model option')]
    .some((o) => o.value === 'llmcloud-default'), { timeout: 10_000 });
  await setValue(page, '#param-temperature', '0.8');
  await setValue(page, '#param-top-p', '0.95');
  await setValue(page, '#param-max-tokens', '300');
  await setValue(page, '#param-seed', '7');

  const bodies = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/v1/chat/completions') {
      bodies.push(JSON.parse(req.postData() || 'null'));
    }
  });

  // Shift+Enter is a new line, not a send.
  await page.click('#chat-input');
  await page.keyboard.type('Once upon a time');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');
  await page.keyboard.type('there was a little dog.');
  assert.equal(await page.$eval('#chat-input', (t) => t.value), 'Once upon a time\nthere was a little dog.');
  assert.equal((await state(page)).users, 0, 'Shift+Enter sent the message');
  assert.equal((await state(page)).stopEnabled, false, '#chat-stop is enabled while idle');

  // The built-in model writes a reply in well under a second; the page's download is throttled
  // (Chromium's network emulation) so the stream lasts long enough to watch it grow and stop it.
  await page.emulateNetworkConditions({ download: 1500, upload: 1_000_000, latency: 0 });
  await page.keyboard.press('Enter'); // Enter sends
  await page.waitForFunction(() => document.body.dataset.chat === 'streaming', { timeout: 5_000 });
  const lengths = [];
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const s = await state(page);
    if (s.chat !== 'streaming') break;
    assert.equal(s.stopEnabled, true, '#chat-stop is disabled while streaming');
    if (s.text.length > 0 && s.text.length !== lengths[lengths.length - 1]) lengths.push(s.text.length);
    if (lengths.length >= 3) break;
    await sleep(100);
  }
  assert.ok(lengths.length >= 3, `the reply did not grow over three observations while streaming: ${lengths}`);
  for (let i = 1; i < lengths.length; i++) assert.ok(lengths[i] > lengths[i - 1], `the reply shrank: ${lengths}`);
  const req = bodies[0];
  assert.ok(req, 'no POST /v1/chat/completions seen');
  assert.equal(req.stream, true);
  assert.equal(req.model, 'llmcloud-default');
  assert.equal(req.temperature, 0.8);
  assert.equal(req.top_p, 0.95);
  assert.equal(req.max_tokens ?? req.max_completion_tokens, 300);
  assert.equal(req.seed, 7);
  assert.deepEqual(req.messages.at(-1), { role: 'user', content: 'Once upon a time\nthere was a little dog.' });

  // Stop: the aborted fetch is the one failed request allowed.
  const abort = guard.allow('the chat fetch aborted by Stop',
    (kind, d) => kind === 'requestfailed' && d.includes('/v1/chat/completions'));
  const beforeStop = (await state(page)).text;
  await page.click('#chat-stop');
  await page.waitForFunction(() => document.body.dataset.chat === 'idle', { timeout: 5_000 });
  await guard.settle(abort);
  guard.revoke(abort);
  const stopped = await state(page);
  assert.equal(stopped.stopped, true, 'the stopped reply has no msg-stopped class');
  assert.ok(stopped.text.length >= beforeStop.length && stopped.text.startsWith(beforeStop),
    `the partial text was not kept: before Stop ${JSON.stringify(beforeStop)}, after ${JSON.stringify(stopped.text)}`);
  assert.equal(stopped.stopEnabled, false, '#chat-stop still enabled after Stop');
  await page.emulateNetworkConditions(null);
  const health = await fetch(env.serve + '/health');
  assert.equal(health.status, 200, 'the server is unhealthy after Stop');

  // A second message, unthrottled, runs to its end with its stats.
  await setValue(page, '#param-max-tokens', '60');
  await setValue(page, '#chat-input', 'Tell me about the sun.');
  await page.click('#chat-send');
  await waitIdle(page, 2);
  const done = await state(page);
  assert.ok(done.text.trim().length > 0, 'the second reply is empty');
  assert.equal(done.stopped, false);
  assert.equal(done.users, 2);
  assert.ok((done.stats.match(/\d+(\.\d+)?/g) || []).length >= 3,
    `the reply's stats lack numbers (tokens, TTFT, tokens/s): ${JSON.stringify(done.stats)}`);
  assert.equal(bodies.length, 2);
  assert.equal(bodies[1].messages.filter((m) => m.role === 'user').length, 2, 'the second request lacks the first turn');

  // Export: the conversation as a JSON file download, with both turns and the replies' text.
  const dl = fs.mkdtempSync(path.join(os.tmpdir(), 'console-export-'));
  try {
    const cdp = await page.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: dl });
    await page.click('#chat-export');
    let file;
    for (let end = Date.now() + 5_000; !file && Date.now() < end; await sleep(100)) {
      file = fs.readdirSync(dl).find((f) => f.endsWith('.json'));
    }
    assert.ok(file, '#chat-export downloaded no .json file');
    const exported = JSON.parse(fs.readFileSync(path.join(dl, file), 'utf8'));
    const flat = JSON.stringify(exported);
    for (const want of ['Once upon a time\nthere was a little dog.', 'Tell me about the sun.', stopped.text, done.text]) {
      assert.ok(flat.includes(JSON.stringify(want).slice(1, -1)), `the export lacks ${JSON.stringify(want)}`);
    }
  } finally {
    fs.rmSync(dl, { recursive: true, force: true });
  }

  // Screenshots: light at both widths, then dark through the toggle.
  await shot(page, 'chat-desktop', desktop);
  await shot(page, 'chat-phone', phone);
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  assert.equal(theme, 'light', 'the theme does not follow prefers-color-scheme: light');
  await page.click('#theme-toggle');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark', { timeout: 2_000 });
  await settle(page);
  await shot(page, 'chat-dark-desktop', desktop);
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const lum = (bg.match(/\d+/g) || [255, 255, 255]).slice(0, 3).reduce((a, b) => a + Number(b), 0) / 3;
  assert.ok(lum < 128, `the dark theme's background is light: ${bg}`);
  await page.click('#theme-toggle');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'light', { timeout: 2_000 });

  guard.check();
  await page.close();
});

test('chat: markup in the system prompt, the user message and the model output shows as text', async () => {
  const { page, guard } = await open(browser, env.serve + '/#/chat');
  await page.waitForFunction(() => document.querySelectorAll('#chat-model option').length > 0, { timeout: 10_000 });
  // The model's output is made the markup by a structured-output choice added to the page's
  // request on its way out: the reply is a real streamed model output.
  await page.setRequestInterception(true);
  const sent = [];
  page.on('request', (req) => {
    if (req.isInterceptResolutionHandled()) return;
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/v1/chat/completions') {
      const body = JSON.parse(req.postData());
      sent.push(body);
      body.structured_outputs = { choice: [XSS] };
      req.continue({ postData: JSON.stringify(body) });
      return;
    }
    req.continue();
  });
  await setValue(page, '#param-max-tokens', '200'); // the markup is 48 tokens
  await page.$eval('#chat-system', (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, XSS);
  await page.$eval('#chat-input', (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }, XSS);
  await page.click('#chat-send');
  await waitIdle(page, 1);
  await sleep(300); // an onerror of an injected <img src=x> would fire by now
  assert.equal(sent.length, 1);
  assert.deepEqual(sent[0].messages[0], { role: 'system', content: XSS }, 'the system prompt was not sent first');
  const texts = await page.evaluate(() => ({
    user: document.querySelector('#chat-messages .msg.msg-user .msg-text')?.textContent,
    reply: document.querySelector('#chat-messages .msg.msg-assistant .msg-text')?.textContent,
    system: document.querySelector('#chat-system').value,
  }));
  assert.equal(texts.user, XSS, 'the user message does not show literally');
  assert.equal(texts.reply, XSS, 'the model output does not show literally');
  assert.equal(texts.system, XSS);
  assert.deepEqual(await xssFired(page), { flag: 'unset', imgs: 0, scripts: 0 }, 'markup in the chat ran');
  guard.check();
  await page.close();
});
