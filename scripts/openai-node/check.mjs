// The official openai npm client against a running `llmcloud serve` (started by run.sh):
// every endpoint and request field of the Go suite (server/openai_test.go), streamed and not.
// Usage: LLMCLOUD_URL=http://127.0.0.1:PORT LLMCLOUD_API_KEY=KEY node check.mjs
import OpenAI from "openai";
import assert from "node:assert/strict";

const url = process.env.LLMCLOUD_URL;
const apiKey = process.env.LLMCLOUD_API_KEY;
const model = "stories";
const prompt = "Once upon a time";
const client = new OpenAI({ baseURL: url + "/v1", apiKey, maxRetries: 0 });
let passed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log("ok   " + name);
  } catch (e) {
    console.log("FAIL " + name + ": " + (e.stack || e));
    process.exitCode = 1;
  }
}

async function expectError(status, param, fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, "not an APIError: " + e);
    assert.equal(e.status, status, e.message);
    if (param) assert.equal(e.param, param);
    assert.ok(e.error && e.error.message && e.type, JSON.stringify(e.error));
    return e;
  }
  assert.fail("expected HTTP " + status);
}

const base = { model, prompt, max_tokens: 20, temperature: 0 };
const greedy = await client.completions.create(base);
const text = greedy.choices[0].text;

await check("completions: greedy, usage, finish length", async () => {
  assert.equal(greedy.object, "text_completion");
  assert.equal(greedy.choices[0].finish_reason, "length");
  assert.equal(greedy.usage.completion_tokens, 20);
  assert.equal(greedy.usage.total_tokens, greedy.usage.prompt_tokens + 20);
  const again = await client.completions.create(base);
  assert.equal(again.choices[0].text, text);
});

await check("completions: stream + include_usage", async () => {
  const stream = await client.completions.create({ ...base, stream: true, stream_options: { include_usage: true } });
  let got = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      got += chunk.choices[0].text;
      finish = chunk.choices[0].finish_reason ?? finish;
    } else usage = chunk.usage;
  }
  assert.equal(got, text);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 20);
});

await check("completions: stop string and list", async () => {
  const i = text.indexOf(" ", 1);
  const stop = text.slice(i, i + 3);
  for (const s of [stop, ["zzzz", stop]]) {
    const r = await client.completions.create({ ...base, stop: s });
    assert.equal(r.choices[0].text, text.slice(0, i));
    assert.equal(r.choices[0].finish_reason, "stop");
  }
});

await check("completions: logit_bias, stop_token_ids, ignore_eos", async () => {
  let r = await client.completions.create({ ...base, max_tokens: 5, logit_bias: { 300: 100 } });
  assert.equal(r.usage.completion_tokens, 5);
  r = await client.completions.create({ ...base, max_tokens: 5, logit_bias: { 300: 100 }, stop_token_ids: [300] });
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(r.usage.completion_tokens, 1);
  r = await client.completions.create({ ...base, max_tokens: 5, logit_bias: { 2: 100 } }); // EOS of tok512
  assert.equal(r.choices[0].finish_reason, "stop");
  r = await client.completions.create({ ...base, max_tokens: 5, logit_bias: { 2: 100 }, ignore_eos: true });
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.completion_tokens, 5);
});

await check("completions: sampling fields, seed, n", async () => {
  const p = { ...base, max_tokens: 16, temperature: 1, top_p: 0.9, top_k: 20, min_p: 0.05, presence_penalty: 0.5,
    frequency_penalty: 0.5, repetition_penalty: 1.1, seed: 42, n: 3, user: "node" };
  const a = await client.completions.create(p);
  const b = await client.completions.create(p);
  assert.equal(a.choices.length, 3);
  a.choices.forEach((c, i) => { assert.equal(c.index, i); assert.equal(c.text, b.choices[i].text); });
});

await check("completions: logprobs and echo", async () => {
  const r = await client.completions.create({ ...base, max_tokens: 6, logprobs: 3, echo: true });
  const c = r.choices[0];
  assert.ok(c.text.startsWith(prompt));
  assert.equal(c.logprobs.tokens.length, 6);
  assert.equal(Object.keys(c.logprobs.top_logprobs[0]).length, 3);
  assert.equal(c.logprobs.text_offset[0], prompt.length);
});

await check("completions: prompt shapes", async () => {
  const tok = await (await fetch(url + "/tokenize", { method: "POST", body: JSON.stringify({ prompt }) })).json();
  for (const [p, n] of [[[prompt, prompt], 2], [tok.tokens, 1], [[tok.tokens, tok.tokens], 2]]) {
    const r = await client.completions.create({ ...base, prompt: p });
    assert.equal(r.choices.length, n);
    r.choices.forEach((c) => assert.equal(c.text, text));
  }
});

const messages = [{ role: "system", content: "be brief" }, { role: "user", content: "hello" }];
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }];

await check("chat: tools, max_completion_tokens, logprobs/top_logprobs", async () => {
  const r = await client.chat.completions.create({ model, messages, tools, max_completion_tokens: 12, temperature: 0,
    logprobs: true, top_logprobs: 2 });
  const c = r.choices[0];
  assert.equal(r.object, "chat.completion");
  assert.equal(c.message.role, "assistant");
  assert.equal(c.finish_reason, "length");
  assert.equal(c.logprobs.content.length, 12);
  assert.equal(c.logprobs.content[0].top_logprobs.length, 2);
  const s = await client.chat.completions.create({ model, messages, tools, max_tokens: 12, temperature: 0, n: 2,
    stream: true, stream_options: { include_usage: true } });
  const texts = ["", ""];
  let usage = null;
  for await (const chunk of s) {
    for (const cc of chunk.choices) texts[cc.index] += cc.delta.content ?? "";
    if (!chunk.choices.length) usage = chunk.usage;
  }
  assert.deepEqual(texts, [c.message.content, c.message.content]);
  assert.equal(usage.completion_tokens, 24);
});

await check("models, tokenize, detokenize, health, version, metrics", async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, model);
  const tok = await (await fetch(url + "/tokenize", { method: "POST", body: JSON.stringify({ prompt }) })).json();
  assert.equal(tok.count, tok.tokens.length);
  const det = await (await fetch(url + "/detokenize", { method: "POST", body: JSON.stringify({ tokens: tok.tokens.slice(1) }) })).json();
  assert.equal(det.prompt.trim(), prompt);
  for (const p of ["/health", "/version", "/metrics"]) assert.equal((await fetch(url + p)).status, 200);
  const m = await (await fetch(url + "/metrics")).text();
  assert.match(m, /vllm:generation_tokens_total\{model_name="stories"\} [1-9]/);
});

await check("errors: 400 names the field, 401, 404, 413, too long", async () => {
  for (const [field, v] of [["temperature", -1], ["top_p", 2], ["n", 0], ["logprobs", 50], ["max_tokens", 0], ["stop", 5]]) {
    const e = await expectError(400, field, () => client.completions.create({ ...base, [field]: v }));
    assert.match(e.message, new RegExp(field));
  }
  const bad = new OpenAI({ baseURL: url + "/v1", apiKey: "wrong", maxRetries: 0 });
  await expectError(401, null, () => bad.completions.create(base));
  await expectError(404, "model", () => client.completions.create({ ...base, model: "gpt-9" }));
  await expectError(413, null, () => client.completions.create({ ...base, prompt: "y".repeat(9 << 20) }));
  const e = await expectError(400, "prompt", () => client.completions.create({ ...base, prompt: " x".repeat(600) }));
  assert.match(e.message, /tokens over/);
});

console.log(`${passed} checks passed` + (process.exitCode ? ", some FAILED" : ""));
