#!/bin/bash
# docs/simulate.md's fidelity table (issue 25): for each workload and rate, a real local cloud
# (up --replicas 3, one thread per replica, round-robin) measured by bench serve, against
# simulate with a profile measured here, the per-step and per-request overheads measured
# against the same cloud, and the host's CPU count (--cpus).
#
#   scripts/simulate-fidelity.sh                  all 9 points, then the table
#   scripts/simulate-fidelity.sh chat 3 [N]       one point (chat|long|prefix RATE)
#   scripts/simulate-fidelity.sh table            the table of the points in $OUT
#   scripts/simulate-fidelity.sh rounds W         one workload's points in $ROUNDS rounds
#   scripts/simulate-fidelity.sh resim [W]       a run in rounds simulated again (a new simulator),
#                                                 its real files kept
#   scripts/simulate-fidelity.sh drift            per round of a run in rounds, each median
#                                                 real / simulated: where the host moved
#   scripts/simulate-fidelity.sh real-vs-real DIR the same table of $OUT's real runs against
#                                                 DIR's (two runs of the script): the noise floor
#
# LLMCLOUD names the binary (default: llmcloud on PATH); OUT the directory for the JSON files
# and logs (default .); N (or NUM_PROMPTS) the requests per point (200); CPUS the cores the
# simulation shares between the replicas (default: nproc); PORT the router's port; CAL_N and
# CAL_RATE the calibration's requests (100; N with ROUNDS) and their rate (1 a second, one at a time);
# CAL_EACH=1 calibrates right before every point instead of once per workload (tried against
# the host's drift; with CAL_N=60 it did worse: docs/simulate-fidelity.md). ROUNDS=K (with the
# whole run) measures each workload in K rounds instead: each round its calibration's
# CAL_N/K requests and N/K at each rate, so that the calibration and the points sample the
# same stretches of the host's drift (CAL_N defaults to N then); each point's rounds are then
# pooled (all their requests, percentiles recomputed) into the files the table reads, the
# rounds' own files in OUT/rK/. ROUND_SECS=S (with ROUNDS) sizes each round's runs by time
# instead: S seconds of requests at each rate and of calibration (RATE x S requests; N and
# CAL_N unused), so that every point samples as much of the host's time as the calibration
# (with N a round, the 6/s point's 10 s could fall wholly in a slow stretch).
#
# Per workload, the overheads are measured first (calibrate): CAL_N (100) requests one at a
# time, arriving at CAL_RATE (1) requests/s (bench --max-concurrency 1 --request-rate 1, seed
# 2: other prompts than the measured points') against the cloud, and the same requests
# simulated the same way (simulate --max-concurrency 1 --request-rate 1): the step overhead is the real median TPOT minus the simulated one;
# then, with that step overhead, each request's real TTFT and TPOT minus its simulated ones
# (overheads-W: simulate --request-overheads, a draw per request), and their medians'
# difference (overhead-W: the constant --request-overhead, used instead with
# OVERHEADS=constant). The arrivals leave each replica idle between its requests, as at the
# measured points: back to back, the real prefills ran 10-17% faster and the decode steps
# slower than after a pause (docs/simulate-fidelity.md, "Calibrating with pauses"), which showed as
# TTFT under-predicted and TPOT over-predicted at the low rates. Each point runs on a fresh
# cloud (empty prefix caches, as the simulation starts).
set -eu
B=${LLMCLOUD:-llmcloud}
OUT=${OUT:-.}
PORT=${PORT:-18473}
CPUS=${CPUS:-$(nproc)}
N=${NUM_PROMPTS:-200}
ROUNDS=${ROUNDS:-1}
# In rounds the calibration's cloud of each round gets as many requests as each point's
# (unless CAL_N says otherwise), so that its lone requests find the prefix cache as the
# points' do: rounds of 50 calibration requests against 150 a point missed it three times as
# often (the prefix workload's five prefixes meet each replica once per cloud).
if [ "$ROUNDS" -gt 1 ]; then CAL_N=${CAL_N:-$N}; fi
CAL_N=${CAL_N:-100}
CAL_RATE=${CAL_RATE:-1}
OVERHEADS=${OVERHEADS:-measured}
CAL_EACH=${CAL_EACH:-0}
ROUND_SECS=${ROUND_SECS:-}
mkdir -p "$OUT"
M=$(ls ~/.cache/llmcloud/default-*.gguf 2>/dev/null | head -1)
if [ -z "$M" ] && [ "${1:-all}" != table ]; then
	# The built-in model's file (its tokenizer for bench and simulate) is written on first use.
	$B profile --engine --quick --threads 1 -o "$OUT/quick-profile.json" >/dev/null
	M=$(ls ~/.cache/llmcloud/default-*.gguf | head -1)
fi
RATES_chat="1 3 6"
RATES_long="1 2.5 5"
RATES_prefix="1 3 6"

args() {
	case $1 in
	chat) echo "--dataset-name random --random-input-len 256 --random-output-len 64" ;;
	# 400, not 448: the server's count of bench's 448-token random prompts is up to 497
	# (invalid UTF-8 becomes U+FFFD in JSON), over max_model_len 512 with 32 outputs.
	long) echo "--dataset-name random --random-input-len 400 --random-output-len 32" ;;
	prefix) echo "--dataset-name prefix-repetition --prefix-repetition-prefix-len 256 --prefix-repetition-suffix-len 128 --prefix-repetition-num-prefixes 5 --prefix-repetition-output-len 64" ;;
	*) echo "unknown workload $1 (chat, long, prefix)" >&2; exit 2 ;;
	esac
}

UP=
up_start() {
	local n
	$B up --replicas 3 --port $PORT --policy round-robin --status-interval 0 --log-file "$OUT/up.log" -- --threads 1 >"$OUT/up.out" 2>&1 &
	UP=$!
	for _ in $(seq 1 240); do
		n=$(curl -sf http://127.0.0.1:$PORT/router/status 2>/dev/null | jq '[.backends[]|select(.healthy)]|length' 2>/dev/null || echo 0)
		[ "${n:-0}" = 3 ] && return 0
		sleep 0.5
	done
	echo "up: 3 healthy replicas not reached in 120 s" >&2
	exit 1
}
up_stop() {
	if [ -n "$UP" ]; then
		kill -INT $UP 2>/dev/null || true
		wait $UP 2>/dev/null || true
		UP=
	fi
}
trap up_stop EXIT

profile() {
	[ -f "$OUT/prof-t1.json" ] || { echo "profile (load average $(cut -d' ' -f1-3 /proc/loadavg))"; $B profile --engine --threads 1 -o "$OUT/prof-t1.json"; }
}

j() { jq -r "$1" "$2"; }

# calibrate W [TAG]: writes $OUT/overhead-TAG (STEP_NS REQUEST_NS) and $OUT/overheads-TAG; TAG
# is W unless given.
calibrate() {
	local w=$1
	local tag=${2:-$1}
	cal_real $w "$OUT" $tag 2 $CAL_N
	cal_fit $w $tag $CAL_N "$OUT/cal-real-$tag.json:2"
}

# cal_real W DIR TAG SEED NUM: NUM calibration requests one at a time against a fresh cloud,
# into DIR/cal-real-TAG.json.
cal_real() {
	local A
	A=$(args $1)
	up_start
	$B bench serve --port $PORT --tokenizer "$M" $A --ignore-eos --max-concurrency 1 --request-rate $CAL_RATE --num-prompts $5 --seed $4 \
		--disable-tqdm --save-result --result-dir "$2" --result-filename cal-real-$3.json >"$2/cal-$3.log" 2>&1
	up_stop
}

# cal_fit W TAG NUM REAL:SEED...: the overheads from one or more calibration runs of NUM
# requests (each REAL file, run with SEED, simulated the same way beside it: cal-sim0-*,
# cal-sim1-*), pooled: the step overhead from all their requests' median TPOT, the request
# overheads from every request's difference.
cal_fit() {
	local w=$1 tag=$2 n=$3 c step req
	shift 3
	local reals=()
	for c in "$@"; do reals+=("${c%:*}"); done
	local real=$OUT/cal-real-$tag.pooled sim0=$OUT/cal-sim0-$tag.pooled sim1=$OUT/cal-sim1-$tag.pooled
	pool "$real" "${reals[@]}"
	cal_sims $w $tag $n sim0 0 "$@"
	step=$(jq -rn --slurpfile r "$real" --slurpfile s "$sim0" '[0, ($r[0].median_tpot_ms - $s[0].median_tpot_ms) * 1e6] | max | floor')
	cal_sims $w $tag $n sim1 $step "$@"
	req=$(jq -rn --slurpfile r "$real" --slurpfile s "$sim1" '[0, ($r[0].median_ttft_ms - $s[0].median_ttft_ms) * 1e6] | max | floor')
	echo "$step $req" >"$OUT/overhead-$tag"
	# Per request (the same order in both: one at a time, the same seeds): real minus
	# simulated TTFT and TPOT, in ns, and the prompt tokens the real server's prefix cache
	# supplied (its usage; a binary whose bench does not record them gives two columns), so
	# that simulated hits and misses draw from the measured ones of their kind.
	jq -rn --slurpfile r "$real" --slurpfile s "$sim1" '$r[0] as $r | $s[0] as $s |
		"# TTFT TPOT [cached prompt tokens]: real minus simulated, per calibration request",
		(range(0; $r.ttfts | length) as $i |
			select(($r.errors[$i] // "") == "" and ($s.errors[$i] // "") == "") |
			"\((($r.ttfts[$i] - $s.ttfts[$i]) * 1e9) | floor)ns \((($r.tpots[$i] - $s.tpots[$i]) * 1e9) | floor)ns" +
			(if $r.cached_tokens then " \($r.cached_tokens[$i])" else "" end))' >"$OUT/overheads-$tag"
	echo "$w: step overhead $step ns, request overhead $req ns (real TTFT $(j .median_ttft_ms "$real") ms, TPOT $(j .median_tpot_ms "$real") ms one at a time)"
}

# cal_sims W TAG NUM KIND STEP_NS REAL:SEED...: each calibration run simulated as it ran, with
# STEP_NS a step, beside its REAL file (cal-KIND-*), and all of them pooled into
# $OUT/cal-KIND-TAG.pooled.
cal_sims() {
	local w=$1 tag=$2 n=$3 kind=$4 step=$5 A c f sims=()
	shift 5
	A=$(args $w)
	for c in "$@"; do
		f=${c%:*}
		f=${f/cal-real-/cal-$kind-}
		sims+=("$f")
		$B simulate --profile "$OUT/prof-t1.json" --replicas 3 --router round-robin --tokenizer "$M" $A --max-concurrency 1 \
			--request-rate $CAL_RATE --num-prompts $n --cpus $CPUS --seed ${c##*:} --step-overhead ${step}ns \
			--json "$f" >>"$OUT/cal-$tag.log" 2>&1
	done
	pool "$OUT/cal-$kind-$tag.pooled" "${sims[@]}"
}

# pool OUT FILE...: bench serve's (or simulate's) results of several runs as one, into OUT:
# their requests in order, the medians and p50/p99 of TTFT and TPOT recomputed over all of
# them as bench computes them (numpy's linear interpolation; TTFT over the successful
# requests, TPOT over those with more than one output token), the throughput their
# completions over their summed durations.
pool() {
	jq -s -c '
		def pct(p): sort as $s | ($s | length) as $n |
			if $n == 0 then 0 else (p / 100 * ($n - 1)) as $r | ($r | floor) as $lo |
				([$lo + 1, $n - 1] | min) as $hi | $s[$lo] + ($r - $lo) * ($s[$hi] - $s[$lo]) end;
		{ttfts: [.[].ttfts[]], tpots: [.[].tpots[]], errors: [.[] | .errors as $e | .ttfts | keys[] | ($e[.] // "")],
		 cached_tokens: (if all(.[]; .cached_tokens != null) then [.[].cached_tokens[]] else null end),
		 output_lens: [.[].output_lens[]], completed: (map(.completed) | add), failed: (map(.failed) | add),
		 duration: (map(.duration) | add), rounds: length} |
		[range(0; .ttfts | length) as $i | select(.errors[$i] == "") | .ttfts[$i]] as $t |
		[range(0; .ttfts | length) as $i | select(.errors[$i] == "" and .output_lens[$i] > 1) | .tpots[$i]] as $p |
		. + {request_throughput: (if .duration > 0 then .completed / .duration else 0 end),
		     median_ttft_ms: ($t | pct(50) * 1000), p50_ttft_ms: ($t | pct(50) * 1000), p99_ttft_ms: ($t | pct(99) * 1000),
		     median_tpot_ms: ($p | pct(50) * 1000), p50_tpot_ms: ($p | pct(50) * 1000), p99_tpot_ms: ($p | pct(99) * 1000)}' "${@:2}" >"$1"
}

point() {
	local w=$1 rate=$2 step req
	local cal=$w
	if [ "$CAL_EACH" = 1 ]; then
		cal=$w-$rate
		calibrate $w $cal
	fi
	[ -f "$OUT/overhead-$cal" ] || calibrate $w
	read -r step req <"$OUT/overhead-$cal"
	local ov="--request-overhead ${req}ns"
	[ "$OVERHEADS" = constant ] || ov="--request-overheads $OUT/overheads-$cal"
	real_point $w $rate "$OUT" 1 $N
	sim_point $w $rate "$OUT" 1 $N $step "$ov"
	echo "$w $rate done (load average $(cat "$OUT/load-$w-$rate"))"
}

# real_point W RATE DIR SEED NUM: bench serve against a fresh cloud into DIR/real-W-RATE.json,
# the load average before and after into DIR/load-W-RATE.
real_point() {
	local w=$1 rate=$2 d=$3 A l0 l1
	A=$(args $w)
	up_start
	l0=$(cut -d' ' -f1 /proc/loadavg)
	$B bench serve --port $PORT --tokenizer "$M" $A --ignore-eos --request-rate $rate --num-prompts $5 --seed $4 \
		--metric-percentiles 50,99 --disable-tqdm --save-result --result-dir "$d" --result-filename real-$w-$rate.json >"$d/$w-$rate.log" 2>&1
	l1=$(cut -d' ' -f1 /proc/loadavg)
	up_stop
	echo "$l0-$l1" >"$d/load-$w-$rate"
}

# sim_point W RATE DIR SEED NUM STEP_NS OVERHEAD_FLAGS: the same point simulated into
# DIR/sim-W-RATE.json.
sim_point() {
	local w=$1 rate=$2 d=$3 A
	A=$(args $w)
	$B simulate --profile "$OUT/prof-t1.json" --replicas 3 --router round-robin --tokenizer "$M" $A --request-rate $rate \
		--num-prompts $5 --seed $4 --metric-percentiles 50,99 --cpus $CPUS --step-overhead ${6}ns $7 \
		--json "$d/sim-$w-$rate.json" >>"$d/$w-$rate.log" 2>&1
}

# per_round RATE TOTAL: the requests a round sends at RATE: RATE x ROUND_SECS with
# ROUND_SECS, else TOTAL/ROUNDS.
per_round() {
	if [ -n "$ROUND_SECS" ]; then
		awk -v r="$1" -v s="$ROUND_SECS" 'BEGIN { printf "%d\n", r * s + 0.5 }'
	else
		echo $(($2 / ROUNDS))
	fi
}

# rounds W: the workload in ROUNDS rounds, each on fresh clouds: CAL_N/ROUNDS calibration
# requests (seed 1000+k), then N/ROUNDS requests at each rate (seed k), into $OUT/rK/. The
# calibration is then fitted over all rounds' requests, every round's points simulated with
# it, and each point's rounds pooled into $OUT/real-W-RATE.json and sim-W-RATE.json (all their
# requests; percentiles recomputed), so that the calibration and the points sample the same
# stretches of the host's drift.
rounds() {
	local w=$1 k rate d
	local rates=RATES_$w cn
	cn=$(per_round $CAL_RATE $CAL_N)
	for k in $(seq 1 $ROUNDS); do
		d=$OUT/r$k
		mkdir -p "$d"
		cal_real $w "$d" $w $((1000 + k)) $cn
		for rate in ${!rates}; do
			real_point $w $rate "$d" $k "$(per_round $rate $N)"
		done
		echo "$w round $k of $ROUNDS done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	done
	rounds_sim $w
}

# rounds_sim W: the simulated half of rounds W, from the real files of its ROUNDS rounds in
# $OUT (resim: again, with another binary, the real files kept).
rounds_sim() {
	local w=$1 k rate d step req l0 l1
	local rates=RATES_$w cn cals=()
	cn=$(per_round $CAL_RATE $CAL_N)
	for k in $(seq 1 $ROUNDS); do cals+=("$OUT/r$k/cal-real-$w.json:$((1000 + k))"); done
	cal_fit $w $w $cn "${cals[@]}"
	read -r step req <"$OUT/overhead-$w"
	local ov="--request-overhead ${req}ns"
	[ "$OVERHEADS" = constant ] || ov="--request-overheads $OUT/overheads-$w"
	for rate in ${!rates}; do
		local reals=() sims=()
		for k in $(seq 1 $ROUNDS); do
			d=$OUT/r$k
			sim_point $w $rate "$d" $k "$(per_round $rate $N)" $step "$ov"
			reals+=("$d/real-$w-$rate.json")
			sims+=("$d/sim-$w-$rate.json")
		done
		pool "$OUT/real-$w-$rate.json" "${reals[@]}"
		pool "$OUT/sim-$w-$rate.json" "${sims[@]}"
		l0=$(cut -d- -f1 "$OUT/r1/load-$w-$rate")
		l1=$(cut -d- -f2 "$OUT/r$ROUNDS/load-$w-$rate")
		echo "$l0-$l1" >"$OUT/load-$w-$rate"
	done
}

# table: one row per point found in $OUT: real / simulated (ratio), and whether the ratio is
# within the acceptance bound (p50s and throughput 10%, p99s 20%).
table() {
	echo "| workload, rate (load avg) | req/s | p50 TTFT ms | p99 TTFT ms | p50 TPOT ms | p99 TPOT ms | failed | pass |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	for w in chat long prefix; do
		for r in $(ls "$OUT"/real-$w-*.json 2>/dev/null | sort -t- -k3 -g); do
			local rate=${r##*/real-$w-}
			rate=${rate%.json}
			local s="$OUT/sim-$w-$rate.json"
			[ -z "${CMP:-}" ] || s="$CMP/real-$w-$rate.json"
			[ -f "$s" ] || continue
			jq -rn --slurpfile r "$r" --slurpfile s "$s" --arg name "$w $rate/s ($(cat "$OUT/load-$w-$rate" 2>/dev/null || echo ?))" '
				def cell(k; bound): ($r[0][k]) as $a | ($s[0][k]) as $b |
					(if $a > 0 then $b / $a else 0 end) as $q |
					{text: "\($a*100|round/100) / \($b*100|round/100) (\($q*100|round/100))", ok: ($q >= 1 - bound and $q <= 1 + bound)};
				[cell("request_throughput"; 0.1), cell("p50_ttft_ms"; 0.1), cell("p99_ttft_ms"; 0.2),
				 cell("p50_tpot_ms"; 0.1), cell("p99_tpot_ms"; 0.2)] as $c |
				([$c[] | select(.ok | not)] | length) as $bad |
				"| \($name) | " + ([$c[] | .text + (if .ok then "" else " ✗" end)] | join(" | ")) +
				" | \($r[0].failed) / \($s[0].failed) | " + (if $bad == 0 then "pass" else "FAIL (\($bad))" end) + " |"'
		done
	done
}

# drift: for a run in rounds, each round's median TTFT and TPOT in ms, real / simulated, of the
# calibration (simulated with the fitted step overhead, before the request overheads) and of
# each point: how far the host moved between the rounds and between a calibration and the
# points right after it.
drift() {
	local w k rate f rates
	for w in chat long prefix; do
		[ -f "$OUT/r1/cal-real-$w.json" ] || continue
		rates=RATES_$w
		local head="| $w round | calibration TTFT | TPOT |" rule="| --- | ---: | ---: |"
		for rate in ${!rates}; do
			head+=" $rate/s TTFT | TPOT |"
			rule+=" ---: | ---: |"
		done
		echo "$head"
		echo "$rule"
		for ((k = 1; ; k++)); do
			[ -d "$OUT/r$k" ] || break
			local row="| $k |" pairs=("cal-real-$w cal-sim1-$w")
			for rate in ${!rates}; do pairs+=("real-$w-$rate sim-$w-$rate"); done
			for f in "${pairs[@]}"; do
				set -- $f
				[ -f "$OUT/r$k/$1.json" ] && [ -f "$OUT/r$k/$2.json" ] || { row+=" | |"; continue; }
				row+=$(jq -rn --slurpfile r "$OUT/r$k/$1.json" --slurpfile s "$OUT/r$k/$2.json" \
					'def f: . * 100 | round / 100; " \($r[0].median_ttft_ms | f) / \($s[0].median_ttft_ms | f) | \($r[0].median_tpot_ms * 1000 | round / 1000) / \($s[0].median_tpot_ms * 1000 | round / 1000) |"')
			done
			echo "$row"
		done
		echo
	done
}

case ${1:-all} in
table) table ;;
drift) drift ;;
rounds)
	W=${2:?a workload (chat, long, prefix)}
	args $W >/dev/null
	profile
	rounds $W
	table
	;;
resim)
	# The simulations of a run in rounds again (after a change to the simulator; LLMCLOUD the
	# new binary, ROUNDS and ROUND_SECS as the run had them), the real files and profile kept.
	[ "$ROUNDS" -gt 1 ] || { echo "resim: give the run's ROUNDS (and ROUND_SECS)" >&2; exit 2; }
	for w in ${2:-chat long prefix}; do
		args $w >/dev/null
		[ -f "$OUT/r$ROUNDS/cal-real-$w.json" ] && rounds_sim $w
	done
	table
	;;
real-vs-real)
	CMP=${2:?the directory of the other run}
	echo "(real / real: the points of $OUT against those of $CMP)"
	table
	;;
all)
	profile
	for w in chat long prefix; do
		if [ "$ROUNDS" -gt 1 ]; then
			rounds $w
			continue
		fi
		rates=RATES_$w
		for rate in ${!rates}; do point $w $rate; done
	done
	table
	;;
*)
	W=$1
	RATE=${2:?request rate}
	N=${3:-$N}
	args $W >/dev/null
	profile
	point $W $RATE
	table
	;;
esac
