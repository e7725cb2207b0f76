#!/usr/bin/env bash
# Disaggregated prefill/decode against ordinary replicas (issue 23; docs/disaggregated.md).
# Same hardware share for both: two serve processes, each pinned to one CPU (taskset) with
# --threads 1, behind `llmcloud router`:
#   (a) ordinary: router --policy least-load over two ordinary replicas;
#   (b) pd:       router --policy pd over a --kv-role producer and a --kv-role consumer.
# Workload, the same for both (two `bench serve` clients at once, seeded): long prompts of
# LONG_LEN tokens with 8 output tokens at LONG_RATE req/s, and short chats of 64 prompt tokens
# and 64 output tokens at SHORT_RATE req/s. The short requests' ITL percentiles are the figure
# of merit. Results: OUT/{ordinary,pd}-{short,long}.json and OUT/summary.txt.
#
# Usage: scripts/pd-bench.sh [OUT]   (env: LLMCLOUD=path to a built binary, CPUS="0 1",
#        LONG_LEN=2000 LONG_N=16 LONG_RATE=0.3 SHORT_N=32 SHORT_RATE=0.5 PD_MIN_PROMPT_BYTES=1024,
#        ORDER="ordinary pd" or "pd ordinary": which configuration runs first)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/benchmarks/pd}"
mkdir -p "$out"
work="$(mktemp -d)"
bin="${LLMCLOUD:-$work/llmcloud}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/llmcloud)
read -r cpu0 cpu1 <<<"${CPUS:-0 1}"
long_len="${LONG_LEN:-2000}" long_n="${LONG_N:-16}" long_rate="${LONG_RATE:-0.3}"
short_n="${SHORT_N:-32}" short_rate="${SHORT_RATE:-0.5}"
pd_min="${PD_MIN_PROMPT_BYTES:-1024}" # the chats (64 tokens) go to the consumer alone
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

model="$work/m.gguf"
# The Llama 2 vocabulary (testdata), so that bench serve's token counts are the server's.
"$bin" synth -ctx 4096 -dim 256 -layers 6 -heads 8 -kv-heads 4 -ffn 768 -seed 1 -std 0.05 \
  -tokenizer "$root/testdata/models/llama2-tokenizer/tokenizer.bin" -vocab 32000 -o "$model"

start() { # name cpu port args...
  local name=$1 cpu=$2 port=$3; shift 3
  taskset -c "$cpu" "$bin" serve "$model" --host 127.0.0.1 --port "$port" --threads 1 \
    --disable-log-requests "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}
wait_up() { # url
  for _ in $(seq 300); do curl -sf "$1/health" >/dev/null && return 0; sleep 0.1; done
  echo "$1 never became healthy" >&2; return 1
}
router() { # port policy backends [flags]
  # Generous probe and stall limits: a replica pinned to one CPU in the middle of a 2k-token
  # prefill answers probes late, and must not be ejected for it (in either configuration).
  local port=$1 policy=$2 backends=$3; shift 3
  "$bin" router --host 127.0.0.1 --port "$port" --policy "$policy" --backend "$backends" --health-interval 500ms \
    --health-timeout 10s --stall-timeout 60s --outlier-factor 0 --ttfb-timeout 600s "$@" >"$work/router-$policy.log" 2>&1 &
  pids+=($!)
  wait_up "http://127.0.0.1:$port"
  sleep 2 # a probe and a model list (the replicas' kv_role) after health
}
workload() { # label base
  local common=(--base-url "$2" --dataset-name random --tokenizer "$model" --ignore-eos --seed 1
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --disable-tqdm
    --save-result --result-dir "$out")
  "$bin" bench serve "${common[@]}" --random-input-len "$long_len" --random-output-len 8 \
    --num-prompts "$long_n" --request-rate "$long_rate" --label "$1-long" --result-filename "$1-long.json" \
    >"$out/$1-long.txt" &
  local lp=$!
  sleep 2 # the first long prompt is running when the chats start
  "$bin" bench serve "${common[@]}" --random-input-len 64 --random-output-len 64 \
    --num-prompts "$short_n" --request-rate "$short_rate" --label "$1-short" --result-filename "$1-short.json" \
    --metadata "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" >"$out/$1-short.txt"
  wait "$lp"
}
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

run_ordinary() {
  echo "== (a) ordinary: 2 replicas, router --policy least-load   load: $(cat /proc/loadavg)" | tee -a "$out/summary.txt"
  start a1 "$cpu0" 18301
  start a2 "$cpu1" 18302
  wait_up http://127.0.0.1:18301; wait_up http://127.0.0.1:18302
  router 18300 least-load http://127.0.0.1:18301,http://127.0.0.1:18302
  workload ordinary http://127.0.0.1:18300
  stop_all
}
run_pd() {
  echo "== (b) pd: producer + consumer, router --policy pd   load: $(cat /proc/loadavg)" | tee -a "$out/summary.txt"
  start prod "$cpu0" 18311 --kv-role producer
  start cons "$cpu1" 18312 --kv-role consumer
  wait_up http://127.0.0.1:18311; wait_up http://127.0.0.1:18312
  router 18310 pd http://127.0.0.1:18311,http://127.0.0.1:18312 --pd-min-prompt-bytes "$pd_min"
  workload pd http://127.0.0.1:18310
  curl -s http://127.0.0.1:18312/metrics | grep -E '^llmcloud:kv_transfer_(bytes_total|failures_total|seconds_(sum|count))' >"$out/pd-consumer-metrics.txt"
  curl -s http://127.0.0.1:18310/metrics | grep -E '^llmcloud_router_pd_requests_total' >>"$out/pd-consumer-metrics.txt"
  curl -s http://127.0.0.1:18311/metrics | grep -E '^llmcloud:kv_transfer_(overlapped_blocks_total|after_prefill_seconds_(sum|count))' >>"$out/pd-consumer-metrics.txt"
  stop_all
}
: >"$out/summary.txt"
for c in ${ORDER:-ordinary pd}; do "run_$c"; done
echo "== after   load: $(cat /proc/loadavg)" | tee -a "$out/summary.txt"

for f in ordinary-short pd-short ordinary-long pd-long; do
  echo "-- $f" >>"$out/summary.txt"
  grep -E 'Successful requests|(Mean|Median|P50|P90|P99) (TTFT|ITL|TPOT)' "$out/$f.txt" >>"$out/summary.txt" || true
done
cat "$out/summary.txt" "$out/pd-consumer-metrics.txt"
