// Shared pieces of the client checks: the server's address from the environment, the zod
// schemas and tools every check uses, and check(), which prints PASS/FAIL and counts.
import { z } from "zod";

export const url = process.env.LLMCLOUD_URL;
export const apiKey = process.env.LLMCLOUD_API_KEY || "none";
export const model = process.env.LLMCLOUD_MODEL || "stories";
export const label = process.env.LLMCLOUD_LABEL || model;
export const samples = Number(process.env.LLMCLOUD_SAMPLES || 100);
export const baseURL = url + "/v1";

// Every string is bounded and every number ranged, so that even a random-weight model sampled
// at temperature 1 finishes well inside maxTokens: the grammar closes the object once the last
// bounded field is written.
export const Pet = z.object({
  name: z.string().max(12),
  species: z.enum(["cat", "dog", "bird", "fish"]),
  age: z.number().int().min(0).max(30),
});

export const WeatherArgs = z.object({
  city: z.string().max(16),
  unit: z.enum(["celsius", "fahrenheit"]),
});

export const AddArgs = z.object({
  a: z.number().int().min(-100).max(100),
  b: z.number().int().min(-100).max(100),
});

export const SearchArgs = z.object({
  query: z.string().max(20),
  limit: z.number().int().min(1).max(10),
});

// The tools of the sampled tool_choice "required" check, as OpenAI function tools; their
// parameters are what ajv validates each sampled call against.
export const toolDefs = [
  {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: z.toJSONSchema(WeatherArgs),
  },
  { name: "add", description: "Add two integers", parameters: z.toJSONSchema(AddArgs) },
  { name: "search", description: "Search the web", parameters: z.toJSONSchema(SearchArgs) },
];

export const maxTokens = 160;

let passed = 0;
let failed = 0;

// check runs fn; a throw is a FAIL with the reason. A check that takes longer than ms fails
// too (a server that never ends a constrained request is a failure, not a hang).
export async function check(name, fn, ms = 90_000) {
  const t0 = Date.now();
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
      }),
    ]);
    passed++;
    console.log(`PASS [${label}] ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    let why = e && e.status ? `HTTP ${e.status}: ${e.message}` : (e && e.message) || String(e);
    if (why.length > 600) why = why.slice(0, 600) + "…";
    console.log(`FAIL [${label}] ${name}: ${e && e.name ? e.name + ": " : ""}${why}`);
    process.exitCode = 1;
  } finally {
    clearTimeout(timer);
  }
}

// summary prints the closing count line.
export function summary() {
  console.log(`clients-${label}: ${passed} passed, ${failed} failed`);
}
