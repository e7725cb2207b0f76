// The cloud view against `llmcloud up --replicas 2`: both replicas up, requests through the router
// show in the traces table, the page polls at most 2 requests/s, and a killed replica is marked
// down within the health interval, then up again once the supervisor has restarted it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { desktop, env, getJSON, launch, open, phone, shot, sleep, unlabelled } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// rows reads the replica table as the page shows it.
function rows(page) {
  return page.evaluate(() => [...document.querySelectorAll('#cloud-replicas tr[data-replica]')].map((tr) => ({
    name: tr.dataset.replica,
    healthy: tr.dataset.healthy,
    state: tr.dataset.state,
    health: tr.querySelector('.replica-health')?.textContent.trim(),
  })));
}

async function allUp(page, names, timeout) {
  await page.waitForFunction((names) => {
    const trs = [...document.querySelectorAll('#cloud-replicas tr[data-replica]')];
    return trs.length === names.length && names.every((n) => {
      const tr = trs.find((r) => r.dataset.replica === n);
      return tr && tr.dataset.healthy === 'true' && tr.querySelector('.replica-health')?.textContent.trim() === 'up';
    });
  }, { timeout }, names);
}

async function chat(url, content, maxTokens = 16) {
  const res = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: maxTokens }),
  });
  assert.equal(res.status, 200, `chat through the router: ${res.status}`);
  await res.json();
}

test('cloud: replicas, traces, polling rate, a killed replica marked down and back up', async (t) => {
  const fleet = await getJSON(env.up + '/cloud/status');
  const names = fleet.replicas.map((r) => r.name).sort();
  assert.equal(names.length, 2, `up --replicas 2 runs ${names.length} replicas`);

  const { page, guard } = await open(browser, env.up + '/');
  assert.equal(await page.$eval('meta[name="llmcloud-mode"]', (m) => m.content), 'up');
  assert.equal(await page.evaluate(() => document.body.dataset.view), 'cloud', 'up opens on the cloud view');
  await allUp(page, names, 10_000);
  assert.deepEqual(await unlabelled(page), [], 'every control has a label');

  // Requests through the router show in the traces table (queue, prefill, decode, e2e).
  for (let i = 0; i < 4; i++) await chat(env.up, `Tell me a story about a fox, part ${i}.`);
  await page.waitForFunction(() => document.querySelectorAll('#cloud-requests tr:has(td)').length >= 4,
    { timeout: 10_000 });
  const header = await page.$eval('#cloud-requests', (t) => t.textContent.toLowerCase());
  for (const col of ['queue', 'prefill', 'decode', 'e2e']) assert.ok(header.includes(col), `#cloud-requests has no ${col} column`);
  // The charts draw a line once the page has two polls.
  for (const id of ['#cloud-chart-tokens', '#cloud-chart-kv']) {
    await page.waitForFunction((id) => [...document.querySelectorAll(`${id} path`)]
      .some((p) => (p.getAttribute('d') || '').length > 4), { timeout: 10_000 }, id);
  }
  assert.ok(await page.$('#cloud-autoscale'), 'no #cloud-autoscale');

  // Two clients keep both replicas busy while the page polls (the charts get something to draw),
  // and one open console polls at most 2 requests per second (the contract's cost line).
  let busy = true;
  const load = [0, 1].map(async (c) => {
    for (let i = 0; busy; i++) await chat(env.up, `Client ${c} asks for story ${i} about a brave little fox.`, 96);
  });
  let polls = 0;
  const count = (req) => { if (new URL(req.url()).origin === env.up) polls++; };
  page.on('request', count);
  await sleep(6_000);
  page.off('request', count);
  t.diagnostic(`the cloud view made ${polls} requests in 6 s`);
  assert.ok(polls <= 12 + 1, `the cloud view made ${polls} requests in 6 s (at most 2/s)`);
  assert.ok(polls >= 2, `the cloud view polled ${polls} times in 6 s`);
  await shot(page, 'cloud-desktop', desktop);
  await shot(page, 'cloud-phone', phone);
  busy = false;
  await Promise.all(load);

  // Kill a replica. The page records every change of its row; the supervisor restarts the
  // replica after 0.5 s (doubled per crash within 30 s of its last start), so a crash can come
  // and go between two polls: the replica is killed again each time it is back until the page has
  // shown it down, at most 4 times (0.5 + 1 + 2 + 4 s of backoff).
  const victim = names[0];
  await page.evaluate((victim) => {
    window.__rowLog = [];
    const note = () => {
      const tr = document.querySelector(`#cloud-replicas tr[data-replica="${victim}"]`);
      const e = { healthy: tr?.dataset.healthy ?? 'absent', health: tr?.querySelector('.replica-health')?.textContent.trim() };
      const last = window.__rowLog[window.__rowLog.length - 1];
      if (!last || last.healthy !== e.healthy || last.health !== e.health) window.__rowLog.push({ t: Date.now(), ...e });
    };
    note();
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  }, victim);
  const downSeen = async () => (await page.evaluate(() => window.__rowLog))
    .find((e) => e.healthy === 'false' && e.health === 'down');
  const kills = [];
  let down;
  while (kills.length < 4 && !down) {
    const r = (await getJSON(env.up + '/cloud/status')).replicas.find((x) => x.name === victim);
    if (r && r.pid > 0 && r.state === 'ready' && r.healthy && !kills.some((k) => k.pid === r.pid)) {
      process.kill(r.pid, 'SIGKILL');
      kills.push({ pid: r.pid, t: Date.now() });
    }
    if (kills.length > 0 && Date.now() - kills[kills.length - 1].t > 15_000) break;
    await sleep(50);
    down = await downSeen();
  }
  for (let end = Date.now() + (env.upHealthInterval + 2) * 1000; !down && Date.now() < end; await sleep(50)) {
    down = await downSeen();
  }
  const log = await page.evaluate(() => window.__rowLog);
  assert.ok(down, `the page never marked ${victim} down after ${kills.length} kills; its row: ${JSON.stringify(log)}`);
  const killedAt = kills.filter((k) => k.t <= down.t).at(-1);
  assert.ok(killedAt, `${victim} marked down before it was killed: ${JSON.stringify(log)}`);
  const delay = (down.t - killedAt.t) / 1000;
  t.diagnostic(`${victim} killed ${kills.length}x, marked down ${delay.toFixed(2)} s after the kill`);
  assert.ok(delay <= env.upHealthInterval + 2,
    `${victim} marked down ${delay.toFixed(2)} s after the kill (health interval ${env.upHealthInterval} s + 2 s)`);

  // The supervisor restarts it; the page shows it up again.
  await allUp(page, names, 20_000);
  const back = (await getJSON(env.up + '/cloud/status')).replicas.find((x) => x.name === victim);
  assert.ok(back.restarts >= 1 && !kills.some((k) => k.pid === back.pid), `${victim} not restarted: ${JSON.stringify(back)}`);
  const shown = (await rows(page)).find((r) => r.name === victim);
  assert.equal(shown.state, back.state);
  // Its row says it restarted (a crash repaired between two polls shows there too).
  await page.waitForSelector(`#cloud-replicas tr[data-replica="${victim}"] td[data-restarted="true"]`, { timeout: 5_000 });

  guard.check();
  await page.close();
});
