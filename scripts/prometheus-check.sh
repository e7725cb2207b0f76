#!/usr/bin/env bash
# Starts `llmcloud serve` and Debian's prometheus (the binary, not the service) with
# deploy/prometheus.yml pointed at it, sends traffic, and checks that the PromQL query
# rate(vllm:generation_tokens_total[1m]) returns a positive value.
# Usage: scripts/prometheus-check.sh [MODEL]   (needs: apt-get install -y prometheus; curl; python3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-$root/testdata/models/stories260K/stories260K.bin}"
server_port="${SERVER_PORT:-18000}"
prom_port="${PROM_PORT:-19090}"
prometheus="${PROMETHEUS:-$(command -v prometheus || echo /usr/bin/prometheus)}"
tmp="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/llmcloud" ./cmd/llmcloud)
"$tmp/llmcloud" serve "$model" --host 127.0.0.1 --port "$server_port" --served-model-name stories \
  --disable-log-requests --threads 2 2>"$tmp/serve.log" &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$server_port/health" >/dev/null && break; sleep 0.1; done

# deploy/prometheus.yml with a 1 s scrape interval and this server as the target.
sed -e "s/127.0.0.1:8000/127.0.0.1:$server_port/" -e "s/scrape_interval: 5s/scrape_interval: 1s/" \
  "$root/deploy/prometheus.yml" >"$tmp/prometheus.yml"
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null && break; sleep 0.2; done
echo "prometheus $("$prometheus" --version 2>&1 | head -1)"

# Traffic: 4 clients sending completions for 20 s.
end=$((SECONDS + 20))
for c in 1 2 3 4; do
  (while [ $SECONDS -lt $end ]; do
    curl -sf "http://127.0.0.1:$server_port/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"model\":\"stories\",\"prompt\":\"Once upon a time $c\",\"max_tokens\":64,\"temperature\":1}" >/dev/null
  done) &
  pids+=($!)
done
sleep 22

curl -sf "http://127.0.0.1:$prom_port/api/v1/targets" | python3 -c 'import json,sys; [print("   target", t["scrapeUrl"], t["health"], t["lastError"]) for t in json.load(sys.stdin)["data"]["activeTargets"]]'
query='rate(vllm:generation_tokens_total[1m])'
echo "query: $query"
python3 - "http://127.0.0.1:$prom_port/api/v1/query" "$query" <<'PY'
import json, sys, time, urllib.parse, urllib.request
url, query = sys.argv[1], sys.argv[2]
for attempt in range(15):  # the first scrapes may still be missing: retry for up to 30 s
    r = json.load(urllib.request.urlopen(url + "?" + urllib.parse.urlencode({"query": query})))
    res = r["data"]["result"]
    if r["status"] == "success" and any(float(s["value"][1]) > 0 for s in res):
        for s in res:
            print("  ", s["metric"], "=", s["value"][1], "tokens/s")
        print("PASS")
        sys.exit(0)
    time.sleep(2)
print("FAIL: no positive rate:", r)
sys.exit(1)
PY
curl -sfG "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode 'query=vllm:kv_cache_usage_perc' |
  python3 -c 'import json,sys; [print("   vllm:kv_cache_usage_perc", s["metric"].get("model_name"), "=", s["value"][1]) for s in json.load(sys.stdin)["data"]["result"]]'
