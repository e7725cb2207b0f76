// The synth command: llmcloud synth --arch A [shape flags | --preset P] -o OUT writes a
// random-weight model (see package synth) as GGUF (OUT ends in .gguf) or a Hugging Face
// directory, one tensor at a time.
package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register("synth", "write a random-weight model of a given shape (GGUF or Hugging Face)", runSynth)
}

func runSynth(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synth", stderr)
	preset := fs.String("preset", "", "shape of a known model: "+presetNames())
	arch := fs.String("arch", "", "architecture: "+archNames()+" (default llama)")
	dim := fs.Int("dim", 0, "embedding width (default 64)")
	layers := fs.Int("layers", 0, "transformer blocks (default 2)")
	heads := fs.Int("heads", 0, "query heads (default 4)")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads (default: heads)")
	headDim := fs.Int("head-dim", 0, "per-head width (default dim/heads)")
	ffn := fs.Int("ffn", 0, "feed-forward width (default 4*dim)")
	vocab := fs.Int("vocab", 0, "vocabulary size (default: the tokenizer's)")
	ctx := fs.Int("ctx", 0, "context length (default 512)")
	theta := fs.Float64("rope-theta", 0, "RoPE base (default: the architecture's usual one, llama 10000, qwen 1e6)")
	tied := fs.Bool("tied", false, "tie the output projection to the token embedding")
	experts := fs.Int("experts", 0, "mixture-of-experts expert count (llama: Mixtral); 0 = dense")
	expertsUsed := fs.Int("experts-used", 0, "experts used per token (default min(2, experts))")
	expertFFN := fs.Int("expert-ffn", 0, "an expert's feed-forward width (default: ffn; qwen2moe: ffn/experts-used)")
	sharedFFN := fs.Int("shared-ffn", 0, "the shared expert's feed-forward width (qwen2moe; default ffn)")
	origCtx := fs.Int("rope-orig-ctx", 0, "LongRoPE scaling (phi3) trained at this original context: made-up long/short factors (default: none)")
	seed := fs.Uint64("seed", 0, "random seed")
	std := fs.Float64("std", 0, "standard deviation of the random weights (default 0.02)")
	typ := fs.String("type", "f32", "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k (GGUF only for the last four)")
	tok := fs.String("tokenizer", "", "tokenizer (tokenizer.json, tokenizer.bin, GGUF, HF dir, vocab.json+merges.txt dir); default: 256 bytes + BOS/EOS")
	name := fs.String("name", "", "model name")
	out := fs.String("o", "", "output: *.gguf, else a Hugging Face directory")
	window := fs.Int("window", 0, "sliding-window attention span (gemma2, gemma3: of the local layers, default 4096; gpt-oss: of the even layers, default 128; phi3: of every layer, default none)")
	pattern := fs.Int("window-pattern", 0, "gemma3: every N-th layer global, the others local (default 6)")
	localTheta := fs.Float64("rope-local-theta", 0, "gemma3: RoPE base of the local layers (default 10000)")
	ropeLinear := fs.Float64("rope-linear", 0, "gemma3: linear RoPE scaling factor of the global layers (default none)")
	attnCap := fs.Float64("attn-softcap", 0, "gemma2: attention logit soft-cap (default 50)")
	finalCap := fs.Float64("final-softcap", 0, "gemma2: final logit soft-cap (default 30)")
	qScalar := fs.Float64("query-scalar", 0, "gemma2: query_pre_attn_scalar, scores scaled by its 1/sqrt (default: head dim)")
	qLora := fs.Int("q-lora-rank", 0, "deepseek2: q's low-rank width (default 0: a plain attn_q)")
	kvLora := fs.Int("kv-lora-rank", 0, "deepseek2: the KV latent's width (default 4 x the non-rotated head width)")
	ropeDim := fs.Int("rope-dim", 0, "deepseek2: the rotated part of a q/k head (default a third of -head-dim, even)")
	vHeadDim := fs.Int("v-head-dim", 0, "deepseek2: a value head's width (default the non-rotated part of a q/k head)")
	denseLead := fs.Int("dense-lead", 0, "deepseek2: leading blocks with a dense feed-forward")
	expScale := fs.Float64("experts-scale", 0, "deepseek2: routed experts' weight scale (routed_scaling_factor, default 1)")
	expNorm := fs.Bool("experts-norm", false, "deepseek2: renormalise the top-k weights (norm_topk_prob)")
	expSigmoid := fs.Bool("experts-sigmoid", false, "deepseek2: sigmoid router scores (default softmax)")
	expBias := fs.Bool("experts-bias", false, "deepseek2: DeepSeek-V3's expert selection bias (exp_probs_b.bias, random)")
	groups := fs.Int("expert-groups", 0, "deepseek2: grouped top-k, the experts in this many groups (n_group)")
	groupsUsed := fs.Int("expert-groups-used", 0, "deepseek2: grouped top-k, the groups searched (topk_group)")
	yarnFactor := fs.Float64("yarn-factor", 0, "deepseek2, gpt-oss: YaRN RoPE scaling by this factor (default none)")
	yarnOrig := fs.Int("yarn-orig-ctx", 0, "deepseek2, gpt-oss: YaRN's original context")
	expertType := fs.String("expert-type", "", "mxfp4: the stacked experts' weights in MXFP4 (gpt-oss; kept in GGUF with the default --type, dequantized in a Hugging Face directory)")
	yarnLog := fs.Float64("yarn-log-mul", 0, "deepseek2: rope.scaling.yarn_log_multiplier (0.1 x mscale_all_dim)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected arguments %q", pos)
	}
	if *out == "" {
		return usagef("-o OUT is required")
	}
	var o synth.Options
	if *preset != "" {
		p, ok := synth.Presets[*preset]
		if !ok {
			return usagef("unknown preset %q (%s)", *preset, presetNames())
		}
		o = p
		o.Name = *preset
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range []struct {
		flag string
		dst  *int
		v    int
	}{{"dim", &o.Dim, *dim}, {"layers", &o.Layers, *layers}, {"heads", &o.Heads, *heads},
		{"kv-heads", &o.KVHeads, *kvHeads}, {"head-dim", &o.HeadDim, *headDim}, {"ffn", &o.FFN, *ffn},
		{"vocab", &o.Vocab, *vocab}, {"ctx", &o.CtxLen, *ctx}, {"experts", &o.Experts, *experts},
		{"experts-used", &o.ExpertsUsed, *expertsUsed}, {"expert-ffn", &o.ExpertFFN, *expertFFN},
		{"shared-ffn", &o.SharedFFN, *sharedFFN},
		{"rope-orig-ctx", &o.RopeOrigCtx, *origCtx}, {"q-lora-rank", &o.QLoraRank, *qLora},
		{"kv-lora-rank", &o.KVLoraRank, *kvLora}, {"rope-dim", &o.RopeDim, *ropeDim}, {"v-head-dim", &o.VHeadDim, *vHeadDim},
		{"dense-lead", &o.DenseLead, *denseLead}, {"expert-groups", &o.ExpertGroups, *groups},
		{"expert-groups-used", &o.ExpertGroupsUsed, *groupsUsed}, {"yarn-orig-ctx", &o.YarnOrigCtx, *yarnOrig}} {
		if set[f.flag] {
			*f.dst = f.v
		}
	}
	if set["arch"] {
		o.Arch = *arch
	}
	if set["rope-theta"] {
		o.RopeTheta = *theta
	}
	if set["tied"] {
		o.Tied = *tied
	}
	if set["name"] {
		o.Name = *name
	}
	o.Std = *std
	// Zero (the flags' default) means the family's default in synth.Options.
	o.SlidingWindow, o.SlidingPattern, o.RopeLocalTheta, o.RopeLinear = *window, *pattern, *localTheta, *ropeLinear
	o.AttnSoftcap, o.FinalSoftcap, o.AttnScalar = *attnCap, *finalCap, *qScalar
	o.ExpertsScale, o.ExpertsNorm, o.ExpertsSigmoid = *expScale, *expNorm, *expSigmoid
	o.ExpertsBias, o.YarnFactor, o.YarnLogMul = *expBias, *yarnFactor, *yarnLog
	o.Seed = *seed
	switch strings.ToLower(*expertType) {
	case "", "f32":
	case "mxfp4":
		o.ExpertType = tensor.MXFP4
	default:
		return usagef("--expert-type %q: want mxfp4 or f32", *expertType)
	}
	if set["std"] {
		o.Std = *std
	}
	if *tok != "" {
		v, tmpl, err := synth.LoadTokenizer(*tok)
		if err != nil {
			return err
		}
		o.Tokenizer, o.ChatTemplate = v, tmpl
		if !set["vocab"] && *preset == "" {
			o.Vocab = len(v.Tokens)
		}
	}
	p, err := o.Plan()
	if err != nil {
		return err
	}
	if strings.HasSuffix(*out, ".bin") {
		return usagef("synth writes GGUF (*.gguf) or a Hugging Face directory; convert the result to llama2.c")
	}
	opts := convert.Options{Type: *typ, Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }}
	if err := convert.Write(*out, p, opts); err != nil {
		return err
	}
	c := p.Config
	moe := ""
	if c.Experts > 0 {
		moe = fmt.Sprintf(" (%d experts of %d, %d per token", c.Experts, c.ExpertWidth(), c.ExpertsUsed)
		if c.SharedFFN > 0 {
			moe += fmt.Sprintf(", a shared expert of %d", c.SharedFFN)
		}
		moe += ")"
	}
	fmt.Fprintf(stdout, "wrote %s: %s dim %d, %d layers, %d/%d heads (head dim %d), ffn %d%s, vocab %d, %s, seed %d\n",
		*out, c.Arch, c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, moe, c.Vocab, *typ, o.Seed)
	return nil
}

func presetNames() string {
	names := make([]string, 0, len(synth.Presets))
	for n := range synth.Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// archNames lists the registered architectures (model.Families).
func archNames() string {
	var names []string
	for _, f := range model.Families() {
		names = append(names, f.Arch)
	}
	return strings.Join(names, ", ")
}
