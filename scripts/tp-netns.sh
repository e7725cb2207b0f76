#!/usr/bin/env bash
# TP=2 decode step time across two network namespaces, with and without an added latency.
#
# Three namespaces: rank 0 of `llmcloud serve -tp 2` in A, rank 1 in B, and between them M,
# where `netdelay bridge` forwards every Ethernet frame between the two veth pairs DELAY after
# it arrived (this kernel has no netem qdisc; the bridge is the cable). The two ranks find each
# other with --distributed-init A's-address:29500, as ranks on two hosts do. The link is
# measured first (`netdelay probe`: round trips of 1 B, 2 KiB and 64 KiB messages, bandwidth),
# with the bridge's delay at 0 and at DELAY; then the same greedy decode runs ROUNDS times at
# each delay, alternating, the ranks staying up (only the bridge is restarted). Each line gives
# the decode step time, (duration - ttft) / (tokens - 1) from rank 0's request log line, and
# per step (the request's output tokens) how many collectives rank 0 ran and how long it spent
# in them (its /metrics: llmcloud_ccl_collectives_total, llmcloud_ccl_collective_seconds).
# docs/distributed-serving.md has the model these numbers are compared with.
#
#   sudo scripts/tp-netns.sh                     # the 320 MB F16 synth model, DELAY=1ms
#   SIZE=small sudo -E scripts/tp-netns.sh       # a 13 MB one: the step is mostly the link
#   DELAY=2ms TOKENS=64 ROUNDS=2 MODEL=m.gguf sudo -E scripts/tp-netns.sh
#
# Needs root, ip (iproute2) and go. Everything it starts is stopped and the namespaces are
# deleted on exit, however it exits.
set -euo pipefail

DELAY=${DELAY:-1ms}
TOKENS=${TOKENS:-128}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
MODEL=${MODEL:-}

[ "$(id -u)" = 0 ] || { echo "tp-netns.sh: needs root (network namespaces)" >&2; exit 1; }
command -v ip >/dev/null || { echo "tp-netns.sh: needs ip (iproute2)" >&2; exit 1; }

cd "$(dirname "$0")/.."
WORK=$(mktemp -d /tmp/tp-netns.XXXXXX)
A=tpa$$ M=tpm$$ B=tpb$$
PIDS=()
BRIDGE=

cleanup() {
	set +e
	for p in "${PIDS[@]}" $BRIDGE; do kill "$p" 2>/dev/null; done
	for _ in $(seq 50); do
		alive=
		for p in "${PIDS[@]}" $BRIDGE; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ -z "$alive" ] && break
		sleep 0.2
	done
	for p in "${PIDS[@]}" $BRIDGE; do kill -9 "$p" 2>/dev/null; done
	for n in $A $M $B; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "building llmcloud and netdelay in $WORK" >&2
go build -o "$WORK/llmcloud" ./cmd/llmcloud
go build -o "$WORK/netdelay" ./cmd/netdelay
if [ -z "$MODEL" ]; then
	MODEL=$WORK/big.gguf
	if [ "${SIZE:-big}" = small ]; then # compute small against the link's latency
		"$WORK/llmcloud" synth -o "$MODEL" --dim 256 --layers 8 --heads 8 --kv-heads 4 --ffn 704 \
			--vocab 8192 --type f16 >&2
	else
		"$WORK/llmcloud" synth -o "$MODEL" --dim 1024 --layers 8 --heads 16 --kv-heads 8 --ffn 2816 \
			--vocab 32000 --type f16 >&2
	fi
fi

for n in $A $M $B; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip link add a0 netns $A type veth peer name a1 netns $M
ip link add b0 netns $B type veth peer name b1 netns $M
ip -n $A addr add 10.77.0.1/24 dev a0
ip -n $B addr add 10.77.0.2/24 dev b0
ip netns exec $M sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || true
for l in "$A a0" "$B b0" "$M a1" "$M b1"; do set -- $l; ip -n "$1" link set "$2" up; done

# bridge DELAY: (re)start the bridge in M with that delay.
bridge() {
	if [ -n "$BRIDGE" ]; then kill "$BRIDGE"; wait "$BRIDGE" 2>/dev/null || true; fi
	ip netns exec $M "$WORK/netdelay" bridge -a a1 -b b1 -delay "$1" 2>>"$WORK/bridge.log" &
	BRIDGE=$!
	sleep 0.3
}

bridge 0
ip netns exec $B "$WORK/netdelay" echo -listen 10.77.0.2:9555 &
PIDS+=($!)
sleep 0.3
for d in 0 "$DELAY"; do
	bridge "$d"
	echo "link, bridge delay $d:"
	ip netns exec $A "$WORK/netdelay" probe -addr 10.77.0.2:9555 -n 200 | tee "$WORK/probe-$d.txt" | sed 's/^/  /'
done
# Δ64K: what the delay adds to the 64 KiB logits message beyond a small one's latency (ms).
rt() { awk -v s="$2" '$1 == "round" && $3 == s { print $5 }' "$WORK/probe-$1.txt"; }
D64=$(awk -v a="$(rt "$DELAY" 65536)" -v b="$(rt "$DELAY" 2048)" -v c="$(rt 0 65536)" -v e="$(rt 0 2048)" \
	'BEGIN { printf "%.3f", ((a - b) - (c - e)) / 2 }')
# The model from the idle probes: 35 one-way trips of ΔL (half the 2 KiB round trips' difference) + Δ64K.
MODEL_IDLE=$(awk -v a="$(rt "$DELAY" 2048)" -v b="$(rt 0 2048)" -v d64="$D64" 'BEGIN { printf "%.2f", 35 * (a - b) / 2 + d64 }')

bridge 0
ip netns exec $A "$WORK/llmcloud" serve "$MODEL" -tp 2 --distributed-init 10.77.0.1:29500 --rank 0 \
	--host 127.0.0.1 --port 8000 --threads "$THREADS" --kv-cache-memory 64MiB 2>"$WORK/rank0.log" &
PIDS+=($!)
ip netns exec $B "$WORK/llmcloud" serve "$MODEL" -tp 2 --distributed-init 10.77.0.1:29500 --rank 1 \
	--threads "$THREADS" 2>"$WORK/rank1.log" &
PIDS+=($!)
for _ in $(seq 120); do grep -q 'msg=ready' "$WORK/rank0.log" && break; sleep 0.5; done
grep -q 'msg=ready' "$WORK/rank0.log" || { echo "rank 0 did not start:" >&2; cat "$WORK/rank0.log" "$WORK/rank1.log" >&2; exit 1; }

PROMPT="The quick brown fox jumps over the lazy dog, and then the dog wakes up and chases the fox"
# ccl: rank 0's collectives so far, from its /metrics: "op count seconds" per op.
ccl() {
	ip netns exec $A curl -sf localhost:8000/metrics | awk '
		/^llmcloud_ccl_collectives_total\{.*result="ok"/ { match($0, /op="[^"]*"/); op = substr($0, RSTART+4, RLENGTH-5); n[op] += $NF }
		/^llmcloud_ccl_collective_seconds_sum/ { match($0, /op="[^"]*"/); op = substr($0, RSTART+4, RLENGTH-5); s[op] += $NF }
		END { for (op in n) printf "%s %d %.6f\n", op, n[op], s[op] }' | sort
}
# decode: one greedy completion of TOKENS tokens; prints the decode step time in ms, then per
# step (the request's steps: its output tokens) rank 0's collectives: "op count ms" each.
decode() {
	before=$(ccl)
	ip netns exec $A curl -sf localhost:8000/v1/completions \
		-d "{\"prompt\":\"$PROMPT\",\"max_tokens\":$TOKENS,\"temperature\":0,\"ignore_eos\":true}" >/dev/null
	after=$(ccl)
	line=$(grep 'msg=request ' "$WORK/rank0.log" | tail -n 1)
	echo "$line" | awk '
		function dur(s) { if (s ~ /ms$/) return substr(s, 1, length(s)-2) + 0;
			if (s ~ /µs$/) return substr(s, 1, length(s)-3) / 1000; return substr(s, 1, length(s)-1) * 1000 }
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		  printf "%.2f", (dur(v["duration"]) - dur(v["ttft"])) / (v["output_tokens"] - 1) }'
	steps=$(echo "$line" | sed 's/.*output_tokens=\([0-9]*\).*/\1/')
	join <(echo "$before") <(echo "$after") | awk -v steps="$steps" '{ printf " %s %.1f %.3f", $1, ($4-$2)/steps, 1000*($5-$3)/steps }'
	echo
}
decode >/dev/null # warm: the prompt's prefix cached, the prefill packs made
echo "decode step time, TP=2, $THREADS thread(s) per rank, $TOKENS tokens (load average $(cut -d' ' -f1-3 /proc/loadavg));"
echo "then rank 0's collectives per step: op, count, ms spent in them"
echo "and the 2 KiB round trip measured while the decode runs (\`netdelay probe -paced 1s\`, one every"
echo "5 ms from 0.2 s into the decode: the link as the collectives meet it, CPU waits included);"
echo "model (idle) = 35 x ΔL + Δ64K from the probes above = $MODEL_IDLE ms; model (loaded) = 35 x (loaded"
echo "round trip with the delay - without) / 2 + Δ64K ($D64 ms)"
echo "| round | delay | step | loaded 2 KiB round trip | collectives per step |"
echo "| --- | --- | --- | --- | --- |"
for r in $(seq "$ROUNDS"); do
	for d in 0 "$DELAY"; do
		bridge "$d"
		(sleep 0.2; ip netns exec $A "$WORK/netdelay" probe -addr 10.77.0.2:9555 -paced 1s -gap 5ms >"$WORK/paced.txt") &
		probe=$!
		read -r t rest <<<"$(decode)"
		wait "$probe" || true
		p=$(awk '{ print $6 }' "$WORK/paced.txt")
		echo "| $r | $d | $t ms | $p ms | $rest |"
		if [ "$d" = 0 ]; then t0=$t; p0=$p; else
			awk -v t0="$t0" -v t1="$t" -v p0="$p0" -v p1="$p" -v d64="$D64" -v mi="$MODEL_IDLE" 'BEGIN {
				m = 35 * (p1 - p0) / 2 + d64; o = t1 - t0
				printf "|   | overhead %.2f ms: / model (idle) %.2f = %.2f, / model (loaded) %.2f = %.2f | | |\n", o, mi, o / mi, m, o / m }'
		fi
	done
done
echo "(load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
