#!/usr/bin/env bash
# Issue 7's acceptance runs of `llmcloud up` with real processes, results in OUT (default
# docs/benchmarks/cloud). Usage: scripts/cloud/acceptance.sh [kill|prefix|autoscale]...
# (all three by default). Serves testdata/models/stories260K; builds llmcloud into OUT/.. tmp.
# The numbers are recorded in docs/benchmarks/cloud.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-docs/benchmarks/cloud}
MODEL=${MODEL:-testdata/models/stories260K/stories260K.bin}
BIN=$(mktemp -d)/llmcloud
go build -o "$BIN" ./cmd/llmcloud
mkdir -p "$OUT"
LOGS=$(mktemp -d)
echo "logs in $LOGS"

# wait_ready PORT N: until the router has N healthy backends.
wait_ready() {
  for _ in $(seq 300); do
    case "$(curl -s "localhost:$1/health" || true)" in *"\"healthy_backends\":$2"*) return 0;; esac
    sleep 0.2
  done
  echo "router on $1 never had $2 healthy backends" >&2; return 1
}

# 1. Three replicas under `bench serve`; one replica SIGKILLed mid-run.
run_kill() {
  local port=18101
  "$BIN" up --replicas 3 --host 127.0.0.1 --port $port --model "$MODEL" --log-file "$LOGS/up-kill.log" \
    -- --max-model-len 512 --threads 1 --disable-log-requests &
  local up=$!
  wait_ready $port 3
  "$BIN" bench serve --port $port --dataset-name random --random-input-len 16 --random-output-len 200 \
    --num-prompts 300 --request-rate 30 --seed 0 --ignore-eos --disable-tqdm \
    --save-result --result-dir "$LOGS" --result-filename kill.json --label kill-one-replica > "$LOGS/bench-kill.txt" &
  local bench=$!
  sleep 3
  curl -s localhost:$port/cloud/status > "$LOGS/status-before-kill.json"
  local pid
  pid=$(python3 -c "import json,sys; r=max(json.load(open('$LOGS/status-before-kill.json'))['replicas'], key=lambda r: r['inflight']); print(r['pid'])")
  echo "$(date -u +%H:%M:%S.%3N) SIGKILL pid $pid" | tee "$LOGS/kill.txt"
  kill -9 "$pid"
  # The router's view every 100 ms for 3 s: when the dead URL leaves.
  for _ in $(seq 30); do echo "$(date -u +%H:%M:%S.%3N) $(curl -s localhost:$port/router/status | tr -d ' \n')" >> "$LOGS/router-after-kill.txt"; sleep 0.1; done
  wait $bench
  curl -s localhost:$port/cloud/status > "$LOGS/status-after-kill.json"
  kill -INT $up; wait $up
  cp "$LOGS/bench-kill.txt" "$LOGS/kill.txt" "$LOGS/router-after-kill.txt" "$OUT/"
  python3 -c "import json,collections; r=json.load(open('$LOGS/kill.json')); print('errors:', dict(collections.Counter(e for e in r['errors'] if e)))" | tee "$OUT/kill-errors.txt"
  grep -E "replica exited|replica started|replica ready|ready replicas|backend (down|up)" "$LOGS/up-kill.log" > "$OUT/kill-events.log" || true
}

# 2. Prefix-repetition workload, prefix policy vs round-robin, small KV caches (80 blocks).
run_prefix() {
  local port=18102
  for pol in prefix round-robin; do
    "$BIN" up --replicas 3 --policy $pol --host 127.0.0.1 --port $port --model "$MODEL" --status-interval 0 \
      --log-file "$LOGS/up-$pol.log" -- --max-model-len 512 --threads 1 --kv-cache-memory 1600KiB --disable-log-requests &
    local up=$!
    wait_ready $port 3
    "$BIN" bench serve --port $port --dataset-name prefix-repetition --prefix-repetition-prefix-len 100 \
      --prefix-repetition-suffix-len 20 --prefix-repetition-num-prefixes 6 --prefix-repetition-output-len 32 \
      --num-prompts 300 --request-rate 20 --seed 0 --ignore-eos --disable-tqdm \
      --save-result --result-dir "$OUT" --result-filename "prefix-$pol.json" --label "$pol" > "$LOGS/bench-$pol.txt"
    curl -s localhost:$port/cloud/status > "$OUT/status-$pol.json"
    kill -INT $up; wait $up
  done
  "$BIN" bench compare "$OUT/prefix-round-robin.json" "$OUT/prefix-prefix.json" > "$OUT/prefix-compare.md"
  for pol in prefix round-robin; do
    python3 -c "import json; s=json.load(open('$OUT/status-$pol.json')); print('$pol: fleet prefix-cache hit rate %.4f; per replica (requests, hit rate):' % s['prefix_cache_hit_rate'], [(r['requests'], round(r['prefix_cache_hits']/max(1, r['prefix_cache_queries']), 3)) for r in s['replicas']])"
  done | tee "$OUT/prefix-hit-rates.txt"
}

# 3. A burst against 1 replica with --autoscale 1:3: up to 3, then back to 1 after the window.
run_autoscale() {
  local port=18103
  "$BIN" up --replicas 1 --autoscale 1:3 --target-waiting 2 --scale-up-cooldown 2s --scale-down-cooldown 10s \
    --health-interval 500ms --host 127.0.0.1 --port $port --model "$MODEL" --log-file "$LOGS/up-autoscale.log" \
    -- --max-model-len 512 --threads 1 --max-num-seqs 1 --disable-log-requests &
  local up=$!
  wait_ready $port 1
  "$BIN" bench serve --port $port --dataset-name random --random-input-len 16 --random-output-len 200 \
    --num-prompts 200 --request-rate 40 --seed 0 --ignore-eos --disable-tqdm \
    --save-result --result-dir "$LOGS" --result-filename autoscale.json --label autoscale-burst > "$LOGS/bench-autoscale.txt"
  # Idle: wait for the scale-down to 1 (the 10 s window, then the drain).
  for _ in $(seq 60); do
    n=$(curl -s localhost:$port/cloud/status | python3 -c "import json,sys; print(len(json.load(sys.stdin)['replicas']))")
    [ "$n" = 1 ] && break
    sleep 0.5
  done
  kill -INT $up; wait $up
  grep -E "msg=autoscale|replica (started|ready|draining|stopped)" "$LOGS/up-autoscale.log" > "$OUT/autoscale-events.log" || true
  cp "$LOGS/bench-autoscale.txt" "$OUT/"
}

for step in "${@:-kill prefix autoscale}"; do
  for s in $step; do "run_$s"; done
done
