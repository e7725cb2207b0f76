#!/usr/bin/env bash
# The KV transfer overlapped with the producer's prefill against the sequential order
# (docs/disaggregated.md). One producer (--max-num-batched-tokens CHUNK: a long prompt is
# prefilled in several steps) and one consumer, each pinned to one CPU (taskset, --threads 1),
# and two routers over the same pair: `router --policy pd --pd-sequential` (the consumer gets
# the request after the producer's answer) and `router --policy pd` (both at once, blocks
# streamed as the prefill computes them). Rounds alternate the order of the two modes; each run
# sends N long prompts (LONG_LEN tokens, 8 output tokens) one at a time (--max-concurrency 1),
# with seeds of their own (no prefix-cache hit across runs). Per run: bench serve's TTFT, and
# the producer's and consumer's transfer metrics (deltas). Results in OUT/.
#
# Usage: scripts/pd-overlap-bench.sh [OUT]   (env: LLMCLOUD=binary, CPUS="0 1", CHUNK=256,
#        LONG_LEN=2000, N=4, ROUNDS=3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/benchmarks/pd-overlap}"
mkdir -p "$out"
work="$(mktemp -d)"
bin="${LLMCLOUD:-$work/llmcloud}"
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" ./cmd/llmcloud)
read -r cpu0 cpu1 <<<"${CPUS:-0 1}"
chunk="${CHUNK:-256}" long_len="${LONG_LEN:-2000}" n="${N:-4}" rounds="${ROUNDS:-3}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

model="$work/m.gguf"
"$bin" synth -ctx 4096 -dim 256 -layers 6 -heads 8 -kv-heads 4 -ffn 768 -seed 1 -std 0.05 \
  -tokenizer "$root/testdata/models/llama2-tokenizer/tokenizer.bin" -vocab 32000 -o "$model"
wait_up() { for _ in $(seq 300); do curl -sf "$1/health" >/dev/null && return 0; sleep 0.1; done; echo "$1 not up" >&2; return 1; }
taskset -c "$cpu0" "$bin" serve "$model" --host 127.0.0.1 --port 18331 --threads 1 --disable-log-requests \
  --kv-role producer --max-num-batched-tokens "$chunk" >"$work/prod.log" 2>&1 &
pids+=($!)
taskset -c "$cpu1" "$bin" serve "$model" --host 127.0.0.1 --port 18332 --threads 1 --disable-log-requests \
  --kv-role consumer >"$work/cons.log" 2>&1 &
pids+=($!)
wait_up http://127.0.0.1:18331; wait_up http://127.0.0.1:18332
backends=http://127.0.0.1:18331,http://127.0.0.1:18332
ropts=(--policy pd --backend "$backends" --health-interval 500ms --health-timeout 10s --stall-timeout 60s --outlier-factor 0 --ttfb-timeout 600s)
"$bin" router --host 127.0.0.1 --port 18340 "${ropts[@]}" --pd-sequential >"$work/router-seq.log" 2>&1 &
pids+=($!)
"$bin" router --host 127.0.0.1 --port 18341 "${ropts[@]}" >"$work/router-ovl.log" 2>&1 &
pids+=($!)
wait_up http://127.0.0.1:18340; wait_up http://127.0.0.1:18341
sleep 2 # a probe and a model list (the replicas' kv_role) after health

metric() { # url name: the sum of a series' samples
  curl -s "$1/metrics" | awk -v n="$2" 'index($0, n) == 1 { s += $NF } END { printf "%.6f", s + 0 }'
}
snap() {
  echo "$(metric http://127.0.0.1:18331 'llmcloud:kv_transfer_after_prefill_seconds_sum') $(metric http://127.0.0.1:18331 'llmcloud:kv_transfer_after_prefill_seconds_count') $(metric http://127.0.0.1:18331 'llmcloud:kv_transfer_overlapped_blocks_total') $(metric http://127.0.0.1:18332 'llmcloud:kv_transfer_seconds_sum{direction="received"}') $(metric http://127.0.0.1:18332 'llmcloud:kv_transfer_seconds_count{direction="received"}') $(metric http://127.0.0.1:18332 'llmcloud:kv_transfer_failures_total{direction="received"}')"
}
run() { # mode port seed
  local before after
  before=$(snap)
  "$bin" bench serve --base-url "http://127.0.0.1:$2" --dataset-name random --tokenizer "$model" --ignore-eos \
    --seed "$3" --random-input-len "$long_len" --random-output-len 8 --num-prompts "$n" --max-concurrency 1 \
    --percentile-metrics ttft,e2el --metric-percentiles 50,90,99 --disable-tqdm --save-result --result-dir "$out" \
    --label "$1-$3" --result-filename "$1-$3.json" --metadata "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" >"$out/$1-$3.txt"
  after=$(snap)
  read -r a0 b0 c0 d0 e0 f0 <<<"$before"
  read -r a1 b1 c1 d1 e1 f1 <<<"$after"
  ttft=$(grep -oE '"median_ttft_ms": *[0-9.]+' "$out/$1-$3.json" | grep -oE '[0-9.]+$')
  awk -v m="$1" -v s="$3" -v t="$ttft" -v a="$(echo "$a1 - $a0" | bc -l)" -v b="$(echo "$b1 - $b0" | bc -l)" \
    -v c="$(echo "$c1 - $c0" | bc -l)" -v d="$(echo "$d1 - $d0" | bc -l)" -v e="$(echo "$e1 - $e0" | bc -l)" \
    -v f="$(echo "$f1 - $f0" | bc -l)" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "%-10s seed %2d  TTFT p50 %8.1f ms  after-prefill mean %7.1f ms (%d)  overlapped blocks %5d  consumer fetch mean %7.1f ms (%d, %d failed)  load %s\n",
      m, s, t, (b > 0 ? 1000 * a / b : 0), b, c, (e > 0 ? 1000 * d / e : 0), e, f, l }' | tee -a "$out/summary.txt"
}
: >"$out/summary.txt"
echo "CHUNK=$chunk LONG_LEN=$long_len N=$n ROUNDS=$rounds  load: $(cat /proc/loadavg)" | tee -a "$out/summary.txt"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="seq ovl"; else order="ovl seq"; fi
  for m in $order; do
    if [ "$m" = seq ]; then run sequential 18340 $((10 * r)); else run overlapped 18341 $((10 * r + 1)); fi
  done
done
echo "after  load: $(cat /proc/loadavg)" | tee -a "$out/summary.txt"
