#!/usr/bin/env bash
# Runs the client checks (check.mjs: openai, Vercel AI SDK, LangChain JS; structured output,
# tool calls, the Responses API) against a real `llmcloud serve` on loopback, once per model:
#   stories  testdata/models/stories260K (a small trained model, the chat template of
#            scripts/openai-node/template.jinja)
#   qwen3    a random-weight Qwen3-shaped model that `llmcloud synth` writes with the real Qwen
#            tokenizer (testdata/models/qwen2-tokenizer), served with the Qwen3 chat template and
#            vLLM's flags --tool-call-parser hermes --enable-auto-tool-choice
# Usage: scripts/clients/run.sh            (both models)
#        MODELS=stories scripts/clients/run.sh; LLMCLOUD_SAMPLES=20 ...; LLMCLOUD_ONLY=openai ...
# Needs node and npm; installs the locked packages (npm ci) when node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
[ -d node_modules ] || npm ci --no-audit --no-fund --silent
tmp="$(mktemp -d)"
pid=""
stop() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
  fi
}
trap 'stop; rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/llmcloud" ./cmd/llmcloud)
key="clients-check-key"

# serve NAME MODEL [FLAGS...]: starts llmcloud serve in the background and waits for /health;
# sets addr. Returns non-zero (with the log) if the server exits or never gets healthy.
serve() {
  local name="$1" path="$2"
  shift 2
  : >"$tmp/serve-$name.log"
  "$tmp/llmcloud" serve "$path" --host 127.0.0.1 --port 0 --served-model-name "$name" --api-key "$key" \
    --max-model-len 1024 --threads 2 --disable-log-requests "$@" 2>"$tmp/serve-$name.log" &
  pid=$!
  addr=""
  for _ in $(seq 300); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    addr="$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$tmp/serve-$name.log")"
    if [ -n "$addr" ] && curl -sf "http://$addr/health" >/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "FAIL [$name] llmcloud serve did not start:"
  cat "$tmp/serve-$name.log"
  stop
  return 1
}

# checks NAME: runs check.mjs against the server serve started; records a failure.
failed=0
checks() {
  local t0=$SECONDS
  LLMCLOUD_URL="http://$addr" LLMCLOUD_API_KEY="$key" LLMCLOUD_MODEL="$1" LLMCLOUD_LABEL="$1" \
    node --no-warnings check.mjs || failed=1
  echo "== $1: checks took $((SECONDS - t0)) s"
}

for m in ${MODELS:-stories qwen3}; do
  case "$m" in
  stories)
    if serve stories "$root/testdata/models/stories260K/stories260K.bin" \
      --chat-template "$root/scripts/openai-node/template.jinja"; then
      checks stories
    else failed=1; fi
    ;;
  qwen3)
    "$tmp/llmcloud" synth --arch qwen3 --dim 64 --layers 1 --heads 2 --kv-heads 1 --head-dim 32 --ffn 128 \
      --tied --ctx 1024 --seed 16 --tokenizer "$root/testdata/models/qwen2-tokenizer" -o "$tmp/qwen3" >/dev/null
    # --generation-config vllm: requests that omit top_p sample with top-p 1 (the model has no
    # generation_config defaults; "auto" would be top-p 0.95, a sort of 151k logits per token).
    if serve qwen3 "$tmp/qwen3" --chat-template "$root/chattmpl/testdata/templates/qwen3.jinja" \
      --generation-config vllm --tool-call-parser hermes --enable-auto-tool-choice; then
      checks qwen3
    else failed=1; fi
    ;;
  *) echo "unknown model $m (stories, qwen3)"; exit 2 ;;
  esac
  stop
done
exit "$failed"
