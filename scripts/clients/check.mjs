// Structured output and tool calling through real client libraries against a running
// `llmcloud serve` (started by run.sh). Every check prints PASS or FAIL; the exit code is
// non-zero if any failed.
// Usage: LLMCLOUD_URL=http://127.0.0.1:PORT LLMCLOUD_API_KEY=KEY LLMCLOUD_MODEL=NAME \
//   [LLMCLOUD_LABEL=name] [LLMCLOUD_SAMPLES=100] [LLMCLOUD_ONLY=openai,aisdk,langchain] node check.mjs
import { openaiChecks } from "./openai.mjs";
import { aisdkChecks } from "./aisdk.mjs";
import { langchainChecks } from "./langchain.mjs";
import { summary } from "./common.mjs";

const only = (process.env.LLMCLOUD_ONLY || "openai,aisdk,langchain").split(",");
if (only.includes("openai")) await openaiChecks();
if (only.includes("aisdk")) await aisdkChecks();
if (only.includes("langchain")) await langchainChecks();
summary();
