#!/usr/bin/env bash
# Runs the official openai npm client (check.mjs) against a real `llmcloud serve` on loopback.
# Usage: scripts/openai-node/run.sh [MODEL]   (default testdata/models/stories260K/stories260K.bin)
# Needs node and npm; installs the client into this directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
model="${1:-$root/testdata/models/stories260K/stories260K.bin}"
cd "$here"
npm install --no-audit --no-fund --silent
tmp="$(mktemp -d)"
pid=""
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/llmcloud" ./cmd/llmcloud)
key="node-check-key"
: >"$tmp/serve.log" # exists before the first poll below (the server opens it in the background)
"$tmp/llmcloud" serve "$model" --host 127.0.0.1 --port 0 --served-model-name stories --api-key "$key" \
  --chat-template "$here/template.jinja" --max-model-len 512 --threads 2 --disable-log-requests 2>"$tmp/serve.log" &
pid=$!
addr=""
for _ in $(seq 200); do
  addr="$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$tmp/serve.log")"
  if [ -n "$addr" ] && curl -sf "http://$addr/health" >/dev/null; then break; fi
  sleep 0.1
done
[ -n "$addr" ] || { cat "$tmp/serve.log"; exit 1; }
LLMCLOUD_URL="http://$addr" LLMCLOUD_API_KEY="$key" node check.mjs
kill -TERM "$pid"
wait "$pid"
echo "server exited $?"
