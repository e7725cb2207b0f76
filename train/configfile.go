// This file implements the run configuration's outside forms: a config file (JSON, or YAML
// with the same flat keys) and command-line flags named like the keys, with flags given on
// the command line overriding the file.
package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// LoadFile reads a JSON (*.json) or YAML (anything else) config file over c: keys present in
// the file replace c's values, unknown keys are an error.
func LoadFile(path string, c *Config) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("train: config: %w", err)
	}
	if strings.HasSuffix(path, ".json") {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c); err != nil {
			return fmt.Errorf("train: config %s: %w", path, err)
		}
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("train: config %s: %w", path, err)
	}
	return nil
}

// BindFlags registers one flag per Config field on fs, writing into c; a flag's default is
// c's current value.
func BindFlags(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Data, "data", c.Data, "data directory (shards and tokenizer.json from `llmcloud data prepare`)")
	fs.StringVar(&c.Out, "out", c.Out, "run directory: checkpoints, log.jsonl, loss.png")
	fs.StringVar(&c.Arch, "arch", c.Arch, "architecture: llama (default; with --experts: Mixtral), mistral, qwen2, qwen3, qwen2moe, gemma2, gemma3, phi3")
	fs.IntVar(&c.Window, "window", c.Window, "gemma2/gemma3/phi3: sliding window of the local layers (0 = the family's: gemma 4096, phi3 none)")
	fs.Float64Var(&c.AttnSoftcap, "attn-softcap", c.AttnSoftcap, "gemma2: attention score soft-cap (0 = 50)")
	fs.Float64Var(&c.FinalSoftcap, "final-softcap", c.FinalSoftcap, "gemma2: final logit soft-cap (0 = 30)")
	fs.Float64Var(&c.QueryScalar, "query-scalar", c.QueryScalar, "gemma2/gemma3: query_pre_attn_scalar, scores scaled by 1/sqrt of it (0 = head dim)")
	fs.IntVar(&c.SlidingPattern, "sliding-pattern", c.SlidingPattern, "gemma3: every N-th layer is global, the others local (0 = 6)")
	fs.IntVar(&c.Dim, "dim", c.Dim, "model width")
	fs.IntVar(&c.Layers, "layers", c.Layers, "transformer blocks")
	fs.IntVar(&c.Heads, "heads", c.Heads, "attention heads")
	fs.IntVar(&c.KVHeads, "kv-heads", c.KVHeads, "key/value heads (0 = heads)")
	fs.IntVar(&c.FFN, "ffn", c.FFN, "feed-forward width (0 = 8/3·dim rounded up to 64)")
	fs.IntVar(&c.Ctx, "ctx", c.Ctx, "context length recorded in the model (0 = seq)")
	fs.Float64Var(&c.RopeTheta, "rope-theta", c.RopeTheta, "RoPE frequency base")
	fs.BoolVar(&c.Tied, "tied", c.Tied, "tie the output projection to the token embedding")
	fs.IntVar(&c.Experts, "experts", c.Experts, "mixture of experts: experts per block (0 = a dense feed-forward)")
	fs.IntVar(&c.ExpertsUsed, "experts-used", c.ExpertsUsed, "mixture of experts: experts each token runs (top-k)")
	fs.IntVar(&c.ExpertFFN, "expert-ffn", c.ExpertFFN, "mixture of experts: an expert's feed-forward width (0 = ffn)")
	fs.Float64Var(&c.MoEAuxCoef, "moe-aux-loss-coef", c.MoEAuxCoef, "mixture of experts: weight of the routers' load-balancing loss added to the loss (0 = none)")
	fs.IntVar(&c.Batch, "batch", c.Batch, "sequences per micro-batch (B)")
	fs.IntVar(&c.Seq, "seq", c.Seq, "tokens per sequence (T)")
	fs.IntVar(&c.GradAccum, "grad-accum", c.GradAccum, "micro-batches per optimizer step")
	fs.IntVar(&c.Steps, "steps", c.Steps, "optimizer steps")
	fs.Float64Var(&c.LR, "lr", c.LR, "peak learning rate")
	fs.Float64Var(&c.MinLR, "min-lr", c.MinLR, "learning rate at the last step (cosine decay)")
	fs.IntVar(&c.Warmup, "warmup", c.Warmup, "linear warmup steps")
	fs.Float64Var(&c.WeightDecay, "weight-decay", c.WeightDecay, "decoupled AdamW weight decay (not on 1-D parameters)")
	fs.Float64Var(&c.Beta1, "beta1", c.Beta1, "AdamW beta1")
	fs.Float64Var(&c.Beta2, "beta2", c.Beta2, "AdamW beta2")
	fs.Float64Var(&c.Eps, "eps", c.Eps, "AdamW epsilon")
	fs.Float64Var(&c.Clip, "clip", c.Clip, "clip gradients to this global L2 norm (0 = off)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed (same seed, same losses)")
	fs.IntVar(&c.EvalEvery, "eval-every", c.EvalEvery, "steps between validation runs (0 = only at the end)")
	fs.IntVar(&c.EvalBatches, "eval-batches", c.EvalBatches, "validation batches per evaluation")
	fs.IntVar(&c.MaxBadSteps, "max-bad-steps", c.MaxBadSteps, "consecutive non-finite (NaN/Inf) steps, each skipped, that stop the run with a checkpoint (0 = 5)")
	fs.IntVar(&c.CkptEvery, "ckpt-every", c.CkptEvery, "steps between checkpoints (0 = only at the end)")
	fs.IntVar(&c.LogEvery, "log-every", c.LogEvery, "steps between progress lines")
	fs.IntVar(&c.Threads, "threads", c.Threads, "compute threads")
	fs.IntVar(&c.DP, "dp", c.DP, "data-parallel ranks (0 = world size / (tp·pp))")
	fs.IntVar(&c.TP, "tp", c.TP, "tensor-parallel ranks (0 = 1)")
	fs.IntVar(&c.PP, "pp", c.PP, "pipeline-parallel stages (0 = 1)")
	fs.IntVar(&c.ZeroStage, "zero-stage", c.ZeroStage, "ZeRO stage: 0 (DDP), 1 (optimizer state), 2 (+gradients), 3 (+parameters)")
	fs.IntVar(&c.MicroBatches, "micro-batches", c.MicroBatches, "pipeline micro-batches per batch (0 = pp)")
	fs.StringVar(&c.PPSchedule, "pp-schedule", c.PPSchedule, "pipeline schedule: 1f1b or naive (all forward, then all backward)")
	fs.Float64Var(&c.BucketMB, "bucket-mb", c.BucketMB, "data-parallel gradient bucket size in MiB (0 = 4)")
	fs.BoolVar(&c.Recompute, "recompute", c.Recompute, "recompute each block's forward in backward instead of keeping its activations (activation checkpointing)")
	fs.Float64Var(&c.TimeoutSec, "timeout", c.TimeoutSec, "seconds a collective may wait for the other ranks before the run fails naming them (0 = 60)")
	bindPrecisionFlags(fs, c)
	fs.StringVar(&c.ExportGGUF, "export-gguf", c.ExportGGUF, "write the trained model to this GGUF file at the end")
	fs.StringVar(&c.ExportHF, "export-hf", c.ExportHF, "write the trained model to this Hugging Face directory at the end")
	fs.StringVar(&c.ExportType, "export-type", c.ExportType, "weight type of the exports (f32 default, f16, bf16, q8_0, ...)")
}

// OverlayFlags copies onto c the flags set on the command line of fs (which BindFlags bound
// to another Config): the file gives the base, the command line wins.
func OverlayFlags(fs *flag.FlagSet, c *Config) error {
	dst := flag.NewFlagSet("overlay", flag.ContinueOnError)
	BindFlags(dst, c)
	var err error
	fs.Visit(func(f *flag.Flag) {
		if dst.Lookup(f.Name) == nil || err != nil {
			return
		}
		err = dst.Set(f.Name, f.Value.String())
	})
	return err
}
