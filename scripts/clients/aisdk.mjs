// Checks through the Vercel AI SDK: generateObject and streamText with tools on the chat
// completions provider (createOpenAI(...).chat(model)), and the default provider
// (createOpenAI(...)(model), the Responses API) for text, objects and tool calls.
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, Output, streamText, tool } from "ai";
import assert from "node:assert/strict";
import { apiKey, baseURL, check, maxTokens, model, Pet, WeatherArgs } from "./common.mjs";

const provider = createOpenAI({ baseURL, apiKey });
const common = { maxOutputTokens: maxTokens, temperature: 1, maxRetries: 0 };
const quiet = { onError: () => {} }; // streamText logs errors itself otherwise; the checks report them
const tools = { get_weather: tool({ description: "Current weather in a city", inputSchema: WeatherArgs }) };
// One call per reply (parallel_tool_calls false): with parallel calls allowed a weak model may
// go on writing calls until maxOutputTokens, and the reply ends "length" with the last cut.
const oneCall = { providerOptions: { openai: { parallelToolCalls: false } } };

function checkWeatherCall(calls) {
  assert.ok(calls.length >= 1, "no tool call");
  const c = calls[0];
  assert.equal(c.toolName, "get_weather");
  WeatherArgs.parse(c.input);
}

export async function aisdkChecks() {
  const chat = provider.chat(model);
  await check("ai-sdk chat generateObject", async () => {
    const r = await generateObject({ model: chat, schema: Pet, prompt: "Describe a pet.", ...common });
    assert.equal(r.finishReason, "stop");
    Pet.parse(r.object);
  });

  await check("ai-sdk chat generateText + Output.object", async () => {
    const r = await generateText({ model: chat, output: Output.object({ schema: Pet }), prompt: "Describe a pet.", ...common });
    Pet.parse(r.output);
  });

  await check("ai-sdk chat streamText + tools (toolChoice required)", async () => {
    const r = streamText({ model: chat, tools, toolChoice: "required", prompt: "Weather in Paris?", ...common, ...oneCall, ...quiet });
    const streamed = [];
    for await (const part of r.fullStream) {
      if (part.type === "error") throw part.error;
      if (part.type === "tool-call") streamed.push(part);
    }
    checkWeatherCall(streamed);
    checkWeatherCall(await r.toolCalls);
    assert.equal(await r.finishReason, "tool-calls");
  });

  const resp = provider(model); // the Responses API
  await check("ai-sdk responses generateText (text)", async () => {
    const r = await generateText({ model: resp, prompt: "Once upon a time", ...common, maxOutputTokens: 16 });
    assert.ok(typeof r.text === "string" && r.text.length > 0, "empty text");
    assert.ok(r.usage.outputTokens > 0, "no usage");
  });

  await check("ai-sdk responses streamText (text)", async () => {
    const r = streamText({ model: resp, prompt: "Once upon a time", ...common, maxOutputTokens: 16, ...quiet });
    let text = "";
    for await (const part of r.fullStream) {
      if (part.type === "error") throw part.error;
      if (part.type === "text-delta") text += part.text;
    }
    assert.ok(text.length > 0, "no text deltas");
    assert.equal(text, await r.text);
  });

  await check("ai-sdk responses generateObject", async () => {
    const r = await generateObject({ model: resp, schema: Pet, prompt: "Describe a pet.", ...common });
    Pet.parse(r.object);
  });

  await check("ai-sdk responses generateText + tools (toolChoice required)", async () => {
    const r = await generateText({ model: resp, tools, toolChoice: "required", prompt: "Weather in Paris?", ...common, ...oneCall });
    checkWeatherCall(r.toolCalls);
  });

  await check("ai-sdk responses streamText + tools (toolChoice required)", async () => {
    const r = streamText({ model: resp, tools, toolChoice: "required", prompt: "Weather in Paris?", ...common, ...oneCall, ...quiet });
    for await (const part of r.fullStream) if (part.type === "error") throw part.error;
    checkWeatherCall(await r.toolCalls);
  });
}
