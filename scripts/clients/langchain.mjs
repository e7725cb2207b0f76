// Checks through LangChain JS: ChatOpenAI.withStructuredOutput (its default json_schema method
// and function calling) and bindTools with tool_choice "required" and "any".
import { ChatOpenAI } from "@langchain/openai";
import { tool } from "@langchain/core/tools";
import assert from "node:assert/strict";
import { apiKey, baseURL, check, maxTokens, model, Pet, WeatherArgs } from "./common.mjs";

const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxTokens, temperature: 1, maxRetries: 0 });
const weather = tool(async ({ city }) => `sunny in ${city}`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: WeatherArgs,
});

export async function langchainChecks() {
  await check("langchain withStructuredOutput (default: json_schema)", async () => {
    const obj = await llm.withStructuredOutput(Pet, { name: "pet" }).invoke("Describe a pet.");
    Pet.parse(obj);
  });

  await check("langchain withStructuredOutput (functionCalling)", async () => {
    const obj = await llm.withStructuredOutput(Pet, { name: "pet", method: "functionCalling" }).invoke("Describe a pet.");
    Pet.parse(obj);
  });

  for (const choice of ["required", "any"]) {
    await check(`langchain bindTools tool_choice "${choice}"`, async () => {
      const msg = await llm.bindTools([weather], { tool_choice: choice }).invoke("Weather in Paris?");
      assert.ok(msg.tool_calls && msg.tool_calls.length >= 1, "no tool call: " + JSON.stringify(msg.content));
      assert.equal(msg.tool_calls[0].name, "get_weather");
      WeatherArgs.parse(msg.tool_calls[0].args);
    });
  }
}
