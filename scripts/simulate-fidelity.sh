#!/bin/bash
# One point of docs/simulate.md's fidelity table: a real local cloud (up --replicas 3, one
# thread per replica) measured by bench serve, and simulate with a profile measured here, then
# bench compare. Usage: scripts/simulate-fidelity.sh chat|long|prefix RATE [NUM_PROMPTS]
# LLMCLOUD names the binary (default: llmcloud on PATH); OUT the directory for the JSON files.
set -eu
W=${1:?workload: chat, long or prefix}
RATE=${2:?request rate}
N=${3:-200}
B=${LLMCLOUD:-llmcloud}
OUT=${OUT:-.}
PORT=${PORT:-18473}
M=$(ls ~/.cache/llmcloud/default-*.gguf | head -1)
case $W in
chat) ARGS="--dataset-name random --random-input-len 256 --random-output-len 64" ;;
long) ARGS="--dataset-name random --random-input-len 448 --random-output-len 32" ;;
prefix) ARGS="--dataset-name prefix-repetition --prefix-repetition-prefix-len 256 --prefix-repetition-suffix-len 128 --prefix-repetition-num-prefixes 5 --prefix-repetition-output-len 64" ;;
*) echo "unknown workload $W" >&2; exit 2 ;;
esac
echo "load average: $(cat /proc/loadavg)"
[ -f "$OUT/prof-t1.json" ] || $B profile --engine --threads 1 -o "$OUT/prof-t1.json"
$B up --replicas 3 --port $PORT --policy round-robin --status-interval 0 --log-file "$OUT/up.log" -- --threads 1 &
UP=$!
trap 'kill -INT $UP 2>/dev/null; wait $UP' EXIT
for _ in $(seq 1 120); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 1; done
echo "load average: $(cat /proc/loadavg)"
$B bench serve --port $PORT --tokenizer "$M" $ARGS --ignore-eos --request-rate $RATE --num-prompts $N --seed 1 \
  --metric-percentiles 50,99 --disable-tqdm --save-result --result-dir "$OUT" --result-filename real-$W-$RATE.json
echo "load average: $(cat /proc/loadavg)"
$B simulate --profile "$OUT/prof-t1.json" --replicas 3 --router round-robin $ARGS --request-rate $RATE \
  --num-prompts $N --seed 1 --metric-percentiles 50,99 --json "$OUT/sim-$W-$RATE.json"
$B bench compare "$OUT/real-$W-$RATE.json" "$OUT/sim-$W-$RATE.json"
