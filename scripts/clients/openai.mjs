// Checks through the official openai client: chat.completions.parse with zodResponseFormat,
// responses.parse with zodTextFormat, and N sampled tool_choice "required" responses, each a
// well-formed call of a declared tool whose arguments ajv validates.
import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import Ajv2020 from "ajv/dist/2020.js";
import assert from "node:assert/strict";
import { apiKey, baseURL, check, maxTokens, model, Pet, samples, toolDefs } from "./common.mjs";

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

export async function openaiChecks() {
  await check("openai chat.completions.parse + zodResponseFormat", async () => {
    const r = await client.chat.completions.parse({
      model,
      messages: [{ role: "user", content: "Describe a pet as JSON." }],
      response_format: zodResponseFormat(Pet, "pet"),
      max_tokens: maxTokens,
      temperature: 1,
      seed: 1,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "stop", "finish_reason (content " + JSON.stringify(c.message.content) + ")");
    assert.ok(c.message.parsed, "no parsed object");
    assert.deepEqual(Pet.parse(c.message.parsed), c.message.parsed);
    assert.deepEqual(JSON.parse(c.message.content), c.message.parsed);
  });

  await check("openai chat.completions.stream + zodResponseFormat", async () => {
    const stream = client.chat.completions.stream({
      model,
      messages: [{ role: "user", content: "Describe a pet as JSON." }],
      response_format: zodResponseFormat(Pet, "pet"),
      max_tokens: maxTokens,
      temperature: 1,
      seed: 2,
    });
    const done = await stream.finalChatCompletion();
    const msg = done.choices[0].message;
    assert.ok(msg.parsed, "no parsed object: " + JSON.stringify(msg.content));
    Pet.parse(msg.parsed);
  });

  await check("openai responses.parse + zodTextFormat", async () => {
    const r = await client.responses.parse({
      model,
      input: "Describe a pet as JSON.",
      text: { format: zodTextFormat(Pet, "pet") },
      max_output_tokens: maxTokens,
      temperature: 1,
    });
    assert.equal(r.status, "completed");
    assert.ok(r.output_parsed, "no output_parsed: " + JSON.stringify(r.output_text));
    Pet.parse(r.output_parsed);
  });

  await check(`openai tool_choice "required": ${samples} sampled calls all valid`, async () => {
    const ajv = new Ajv2020({ strict: false });
    const validators = Object.fromEntries(toolDefs.map((t) => [t.name, ajv.compile(t.parameters)]));
    const tools = toolDefs.map((t) => ({ type: "function", function: t }));
    const prompts = ["What is the weather in Paris?", "Add 2 and 3.", "Find cat videos.", "Hello!"];
    const bad = [];
    const used = {};
    let next = 0;
    async function one(i) {
      const r = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: prompts[i % prompts.length] }],
        tools,
        tool_choice: "required",
        parallel_tool_calls: false,
        temperature: 1,
        top_p: 1,
        seed: 1000 + i,
        max_tokens: maxTokens,
      });
      const c = r.choices[0];
      const calls = c.message.tool_calls || [];
      const why = [];
      if (c.finish_reason !== "tool_calls") why.push("finish_reason " + c.finish_reason);
      if (calls.length !== 1) why.push(calls.length + " tool calls");
      for (const call of calls) {
        const v = validators[call.function?.name];
        if (call.type !== "function" || !call.id) why.push("call type/id " + JSON.stringify(call));
        if (!v) {
          why.push("undeclared tool " + JSON.stringify(call.function?.name));
          continue;
        }
        used[call.function.name] = (used[call.function.name] || 0) + 1;
        let args;
        try {
          args = JSON.parse(call.function.arguments);
        } catch (e) {
          why.push("arguments not JSON: " + JSON.stringify(call.function.arguments));
          continue;
        }
        if (!v(args)) why.push(call.function.name + " " + JSON.stringify(args) + ": " + ajv.errorsText(v.errors));
      }
      if (why.length) bad.push(`#${i}: ${why.join("; ")} (message ${JSON.stringify(c.message)})`);
    }
    const workers = Array.from({ length: 16 }, async () => {
      while (next < samples) await one(next++);
    });
    await Promise.all(workers);
    console.log(`     tools called: ${JSON.stringify(used)}`);
    assert.equal(bad.length, 0, `${bad.length} of ${samples} bad:\n  ` + bad.slice(0, 5).join("\n  "));
  }, 180_000);
}
