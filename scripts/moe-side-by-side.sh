#!/usr/bin/env bash
# Single-stream MoE decode against llama.cpp, alternated in rounds (issue 20; docs/performance.md,
# "Forty more rounds, with confidence intervals"). Per round and file: `llama-bench -p 0 -n 64
# -r 3 -t 2`, then `llmcloud bench latency -p 0 -n 64 -r 3 --threads 2 --no-bandwidth`. At the
# end, per file: the per-round ratios' median and geometric mean with 95% bootstrap intervals
# over the rounds. BATCHED=1 adds the 64-sequence pair (`bench throughput` against
# `llama-batched-bench`) once per file.
#
# Usage: scripts/moe-side-by-side.sh FILE.gguf...   (env: LLMCLOUD=built binary, LLAMA_BIN=the
#        directory holding llama-bench (a llama.cpp build of your own), ROUNDS=10, OUT=log file)
# The files: the commands in docs/performance.md, "Mixture of experts".
set -euo pipefail
[ $# -gt 0 ] || { sed -n 2,12p "$0"; exit 2; }
lc="${LLMCLOUD:-llmcloud}"; lb="${LLAMA_BIN:?set LLAMA_BIN to the directory holding llama-bench}"
rounds="${ROUNDS:-10}"; out="${OUT:-$(mktemp)}"
: > "$out"
for r in $(seq 1 "$rounds"); do
  for f in "$@"; do
    echo "== round $r $f $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out"
    "$lb/llama-bench" -m "$f" -p 0 -n 64 -r 3 -t 2 -o md 2>/dev/null | grep tg64 | sed 's/^/llama.cpp /' | tee -a "$out"
    "$lc" bench latency --model "$f" -p 0 -n 64 -r 3 --threads 2 --no-bandwidth 2>/dev/null | grep tg64 | sed 's/^/llmcloud /' | tee -a "$out"
  done
done
if [ -n "${BATCHED:-}" ]; then
  for f in "$@"; do
    echo "== batched $f $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out"
    "$lc" bench throughput --model "$f" --num-prompts 64 --input-len 32 --output-len 64 --threads 2 2>/dev/null | grep -E 'Throughput|Decode-only' | tee -a "$out"
    "$lb/llama-batched-bench" -m "$f" -c 8192 -b 2048 -ub 512 -npp 32 -ntg 64 -npl 64 -t 2 2>/dev/null | grep '^|' | tail -1 | tee -a "$out"
  done
fi
echo "log: $out"
python3 - "$out" <<'PY'
import random, re, statistics as st, sys
rounds = {}
key = None
for line in open(sys.argv[1]):
    m = re.match(r'== round (\d+) (\S+)', line)
    if m:
        key = (m[2], int(m[1])); rounds[key] = {}
        continue
    m = re.match(r'(llama\.cpp|llmcloud) .*tg64 \|\s+([\d.]+)', line)
    if m and key:
        rounds[key][m[1]] = float(m[2])
random.seed(1)
for f in sorted({k[0] for k in rounds}):
    rs = [v['llmcloud'] / v['llama.cpp'] for k, v in sorted(rounds.items()) if k[0] == f and len(v) == 2]
    if not rs:
        continue
    def ci(stat):
        xs = sorted(stat(random.choices(rs, k=len(rs))) for _ in range(10000))
        return xs[250], xs[9750]
    (ml, mh), (gl, gh) = ci(st.median), ci(st.geometric_mean)
    print(f"{f}: {len(rs)} rounds, {sum(r >= 1.2 for r in rs)} at 1.2x or more; median {st.median(rs):.3f} "
          f"(95% CI {ml:.3f}-{mh:.3f}), geometric mean {st.geometric_mean(rs):.3f} (95% CI {gl:.3f}-{gh:.3f})")
PY
