// Package bench is llmcloud's serving benchmark: a load generator for OpenAI-compatible
// servers that measures what `vllm bench serve` measures, the same way, so numbers from
// llmcloud, vLLM and llama.cpp's llama-server can be put side by side.
//
// It is a client only: it never imports compute code. It talks HTTP to /v1/completions or
// /v1/chat/completions with "stream": true and stream_options.include_usage, and times every
// server-sent event chunk that carries generated text:
//
//   - TTFT (time to first token): from just before the request is sent to the first chunk whose
//     text (completions) or delta content / reasoning content (chat) is not empty.
//   - ITL (inter-token latency): every gap between two consecutive content chunks.
//   - E2EL (end-to-end latency): from the send to the last content chunk.
//   - TPOT (time per output token, excluding the first): (E2EL - TTFT) / (output tokens - 1),
//     for requests with more than one output token. Output tokens come from the server's usage
//     chunk; without one, from --tokenizer over the generated text, else the content-chunk count.
//
// Requests arrive as a Poisson process (burstiness 1) or a gamma process with shape burstiness
// and mean gap 1/rate (smaller burstiness = burstier), or all at once (rate inf); an optional
// semaphore caps the requests in flight (max concurrency). Datasets, metrics, the result JSON
// and the printed block are described in docs/bench.md.
//
// Files: dataset*.go make prompts; arrivals.go the inter-arrival gaps; client.go one streamed
// request; run.go drives a whole benchmark; metrics.go turns outputs into numbers; result.go the
// JSON result; report.go the printed block; compare.go the side-by-side table.
package bench
