#!/bin/bash
# docs/speculative.md, "n-gram lookup on a model that copies" (issue 19): n-gram prompt lookup
# on the retelling workload. For each of the first N held-out stories of
# recipes/default/data/val.txt (one paragraph: line breaks become spaces), the prompt is the
# plain-transcript chat turn the model was fine-tuned on ("User: Repeat the story word for
# word.\n\n<story>\nAssistant:"), and `bench latency` decodes 128 tokens greedily with
# speculation off and on, alternated in one process (-r R repetitions each).
#
#   MODEL=run/model.gguf scripts/ngram-retell-bench.sh [N]
#
# LLMCLOUD names the binary (default: llmcloud on PATH); K the draft tokens (4); NMIN, NMAX
# the n-gram lengths (2, 5); R the repetitions (5); the stories must be longer than 128 tokens
# (shorter ones are skipped).
set -eu
B=${LLMCLOUD:-llmcloud}
MODEL=${MODEL:?MODEL=the fine-tuned GGUF}
N=${1:-5}
K=${K:-4}
R=${R:-5}
VAL=${VAL:-$(dirname "$0")/../recipes/default/data/val.txt}
cfg="{\"method\":\"ngram\",\"num_speculative_tokens\":$K,\"prompt_lookup_min\":${NMIN:-2},\"prompt_lookup_max\":${NMAX:-5}}"
i=0
awk 'BEGIN{RS=""} {gsub(/[ \t\r\n]+/, " "); print}' "$VAL" | while IFS= read -r story && [ $i -lt "$N" ]; do
	[ ${#story} -ge 700 ] || continue # about 128 tokens or more
	i=$((i + 1))
	prompt=$(printf 'User: Repeat the story word for word.\n\n%s\nAssistant:' "$story")
	echo "story $i (${#story} bytes): ${story:0:60}..."
	$B bench latency --model "$MODEL" -p 0 -n 128 -r "$R" --no-bandwidth --prompt "$prompt" --speculative-config "$cfg" 2>&1 |
		grep -E "^\| (off|ngram)|^speed-up|^speculation"
done
