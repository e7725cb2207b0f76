// The training viewer against `llmcloud ui RUN` on a real short run: every step of log.jsonl is
// loaded, the summary shows the last step and its loss, and the four charts are drawn.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { desktop, env, getJSON, launch, open, phone, shot, unlabelled } from './lib.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('train: the run\'s steps, summary and charts', async () => {
  const records = fs.readFileSync(path.join(env.runDir, 'log.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  // Step records are the training steps (a loss, or why the step was skipped); the others are
  // validation records ({step, val_loss, val_ppl}).
  const steps = records.filter((r) => 'loss' in r || 'skipped' in r);
  const vals = records.filter((r) => 'val_loss' in r);
  assert.ok(steps.length >= 10 && vals.length >= 2, `the run is too small: ${steps.length} steps, ${vals.length} evaluations`);
  const last = steps.at(-1);

  const run = await getJSON(env.ui + '/console/api/run');
  assert.equal(run.records.length, records.length, '/console/api/run does not return every record of log.jsonl');

  const { page, guard } = await open(browser, env.ui + '/');
  assert.equal(await page.$eval('meta[name="llmcloud-mode"]', (m) => m.content), 'train');
  assert.equal(await page.evaluate(() => document.body.dataset.view), 'train', '`llmcloud ui RUN` opens on the train view');
  await page.waitForFunction((n) => document.body.dataset.trainSteps === String(n), { timeout: 10_000 }, steps.length)
    .catch(async () => {
      const got = await page.evaluate(() => document.body.dataset.trainSteps);
      assert.fail(`body[data-train-steps] is ${got}, log.jsonl has ${steps.length} step records (and ${vals.length} validation records)`);
    });
  assert.deepEqual(await unlabelled(page), [], 'every control has a label');

  const summary = await page.$eval('#train-summary', (s) => s.textContent);
  assert.ok(summary.includes(String(last.step)), `#train-summary does not show the last step ${last.step}: ${JSON.stringify(summary)}`);
  assert.ok(summary.includes(last.loss.toFixed(2)) || summary.includes(last.loss.toFixed(3)),
    `#train-summary does not show the last loss ${last.loss}: ${JSON.stringify(summary)}`);
  const val = vals.at(-1).val_loss;
  assert.ok(summary.includes(val.toFixed(2)) || summary.includes(val.toFixed(3)),
    `#train-summary does not show the last val loss ${val}: ${JSON.stringify(summary)}`);

  for (const id of ['#train-chart-loss', '#train-chart-lr', '#train-chart-gradnorm', '#train-chart-mfu']) {
    const drawn = await page.$$eval(`${id} path`, (ps) => ps.filter((p) => (p.getAttribute('d') || '').length > 4).length);
    assert.ok(drawn >= 1, `${id} has no drawn line`);
  }
  // The loss chart has two series: train and validation.
  const lossSeries = await page.$$eval('#train-chart-loss path', (ps) =>
    ps.filter((p) => (p.getAttribute('d') || '').split(/[MLHVCSQTAZ]/i).length > 3).length);
  assert.ok(lossSeries >= 2, `#train-chart-loss draws ${lossSeries} lines (want train and val)`);

  await shot(page, 'train-desktop', desktop);
  await shot(page, 'train-phone', phone);
  guard.check();
  await page.close();
});
