#!/usr/bin/env bash
# Browser tests of the web console (docs/console.md, "Browser tests"): Debian's Chromium driven by
# puppeteer-core (node:test files *.test.mjs here) against real processes on loopback:
#   - `llmcloud serve` on the built-in default model (chat, bench and train views in serve mode),
#   - the same with --api-key (the key dialog),
#   - `llmcloud up --replicas 2` (the cloud view; a test kills a replica),
#   - `llmcloud ui RUN` on the run directory of a real short `llmcloud train` (the train view),
#   - `llmcloud router` in front of the serve process (every view in router mode),
#   - `llmcloud bench serve` result files made against the serve process (the bench view).
# Usage: scripts/console/run.sh [TEST.test.mjs...] [node --test options...]  (default: every *.test.mjs)
# Env: CHROMIUM (default /usr/bin/chromium); CONSOLE_SCREENSHOTS=1 also rewrites
# docs/console/*.png; CI=true makes a missing Chromium or node_modules a failure, not a skip.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

chromium="${CHROMIUM:-/usr/bin/chromium}"
skip() {
  if [ "${CI:-}" = true ]; then
    echo "console browser tests: $1 (CI=true: failing)" >&2
    exit 1
  fi
  echo "== console browser tests skipped: $1"
  exit 0
}
[ -x "$chromium" ] || skip "no Chromium at $chromium (apt-get install chromium, or set CHROMIUM)"
command -v node >/dev/null 2>&1 || skip "no node"
[ -d "$here/node_modules/puppeteer-core" ] || skip "no node_modules: run (cd scripts/console && npm ci)"

tmp="$(mktemp -d)"
pids=()
cleanup() {
  local code=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # up drains its replicas (--drain-timeout below); anything still alive after 5 s is killed.
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$code" != 0 ]; then
    for f in "$tmp"/*.log; do
      [ -f "$f" ] || continue
      echo "---- $(basename "$f") (last 40 lines)"
      tail -n 40 "$f"
    done
  fi
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building llmcloud"
(cd "$root" && go build -o "$tmp/llmcloud" ./cmd/llmcloud)
bin="$tmp/llmcloud"

# start NAME ARGS...: runs llmcloud ARGS in the background, its stderr (slog) in $tmp/NAME.log.
start() {
  local name=$1
  shift
  : >"$tmp/$name.log"
  "$bin" "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" &
  pids+=($!)
}
# addr NAME PATTERN [PATH]: waits for the log line matching PATTERN (the left side of a sed
# s|...|\1|p expression capturing HOST:PORT), then for GET PATH (default /health) to answer 200;
# sets A to HOST:PORT. (Not a $(...) subshell: a failure there would run the EXIT trap twice.)
addr() {
  local name=$1 pattern=$2 path=${3:-/health}
  A=""
  for _ in $(seq 600); do
    A="$(sed -n "s|.*$pattern.*|\1|p" "$tmp/$name.log" | head -n 1)"
    if [ -n "$A" ] && curl -sf "http://$A$path" >/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "$name: no address answering GET $path after 60 s" >&2
  return 1
}

# The training run: the smallest real run the repo's train tests use (a 300-token BPE tokenizer,
# one block of width 32), with a validation split so the run has val-loss records. ~1 s.
echo "== training a small run"
head -c 60000 "$root/testdata/data/brown/val.txt" >"$tmp/text.txt"
"$bin" tokenizer train --vocab-size 300 --input "$tmp/text.txt" -o "$tmp/tok" >/dev/null
"$bin" data prepare --tokenizer "$tmp/tok" --input "$tmp/text.txt" --docs line --val-fraction 0.1 \
  -o "$tmp/data" >/dev/null
"$bin" train --data "$tmp/data" --out "$tmp/run" --dim 32 --layers 1 --heads 2 --batch 4 --seq 32 \
  --steps 40 --warmup 5 --lr 0.01 --min-lr 0.001 --eval-every 10 --eval-batches 2 --log-every 20 \
  --threads 1 >"$tmp/train.out" 2>"$tmp/train.log"

echo "== starting serve, serve --api-key, up --replicas 2, ui RUN, router"
start serve serve --host 127.0.0.1 --port 0 --threads 1
key="console-test-key-$$"
start servekey serve --host 127.0.0.1 --port 0 --threads 1 --api-key "$key"
start up up --replicas 2 --host 127.0.0.1 --port 0 --health-interval 1s --status-interval 0 \
  --drain-timeout 2s
start ui ui "$tmp/run" --host 127.0.0.1 --port 0
addr serve 'msg=listening addr=\([^ ]*\)'; serve=$A
addr servekey 'msg=listening addr=\([^ ]*\)'; servekey=$A
addr up 'msg="router listening" addr=\([^ ]*\)'; up=$A
addr ui 'the console of .* at http://\([^ ]*\)' /console/api/run; uiaddr=$A
start router router --backend "http://$serve" --host 127.0.0.1 --port 0
addr router 'msg="router listening" addr=\([^ ]*\)'; router=$A

# Two bench results to compare (one request at a time, and four), and one whose file name and
# label are markup (the XSS test). Short: 8 requests of 32 prompt and 16 output tokens.
echo "== bench serve against serve"
mkdir -p "$tmp/bench"
benchrun() {
  "$bin" bench serve --base-url "http://$serve" --endpoint /v1/chat/completions --num-prompts 8 \
    --random-input-len 32 --random-output-len 16 --ignore-eos --seed 1 --disable-tqdm \
    --save-result --result-dir "$tmp/bench" "$@" >>"$tmp/bench.out" 2>>"$tmp/bench.log"
}
benchrun --max-concurrency 1 --label c1 --result-filename c1.json
benchrun --max-concurrency 4 --label c4 --result-filename c4.json
xssname='<img src=x onerror="window.__xss=1">.json'
benchrun --max-concurrency 2 --label '<script>window.__xss=1</script>' --result-filename "$xssname"

echo "== browser tests"
cd "$here"
args=("$@")
case " $* " in *.test.mjs\ *) ;; *) args+=(./*.test.mjs) ;; esac
CONSOLE_SERVE_URL="http://$serve" \
  CONSOLE_SERVEKEY_URL="http://$servekey" CONSOLE_API_KEY="$key" \
  CONSOLE_UP_URL="http://$up" CONSOLE_UP_HEALTH_INTERVAL_S=1 CONSOLE_ROUTER_URL="http://$router" \
  CONSOLE_UI_URL="http://$uiaddr" CONSOLE_RUN_DIR="$tmp/run" \
  CONSOLE_BENCH_FILES="$tmp/bench/c1.json:$tmp/bench/c4.json" CONSOLE_BENCH_XSS="$tmp/bench/$xssname" \
  CONSOLE_DOCS_DIR="$root/docs/console" CHROMIUM="$chromium" \
  node --test --test-concurrency=1 "${args[@]}"

# Screenshots are committed: squeeze them to a palette when pngquant is here (apt-get install pngquant).
if [ "${CONSOLE_SCREENSHOTS:-}" = 1 ] && command -v pngquant >/dev/null 2>&1; then
  pngquant --force --ext .png --quality 80-98 --skip-if-larger --strip "$root"/docs/console/*.png || true
fi
