// Package train is the training loop of llmcloud: a Llama-family model (package train/nn)
// trained on token shards (package data) with AdamW, a warmup + cosine learning-rate schedule,
// gradient accumulation and global-norm clipping; periodic validation, checkpoints that resume
// bit for bit, a progress line with tokens/s and MFU, a JSONL log, a loss-curve PNG, and
// export to GGUF or a Hugging Face directory through package convert. See docs/training.md.
//
// This file implements Config: every setting of a run, its defaults and its validation.
package train

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/llmcloud/llmcloud/model"
)

// Config is one training run. The JSON/YAML keys are the command-line flag names.
type Config struct {
	Data string `json:"data" yaml:"data"` // directory of shards made by `llmcloud data prepare`
	Out  string `json:"out" yaml:"out"`   // run directory: checkpoints, log, loss curve

	// Model shape; the vocabulary comes from the data. Arch is the family ("" or "llama",
	// "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"; the MoE ones with Experts): the
	// family fixes what the architecture implies (Qwen's NeoX RoPE, qwen2's q/k/v biases,
	// qwen3's q/k norms, Gemma's norms, GeGLU and tied output, Phi-3's fused projections) and
	// its usual norm epsilon.
	Arch      string  `json:"arch,omitempty" yaml:"arch"`
	Dim       int     `json:"dim" yaml:"dim"`
	Layers    int     `json:"layers" yaml:"layers"`
	Heads     int     `json:"heads" yaml:"heads"`
	KVHeads   int     `json:"kv-heads" yaml:"kv-heads"` // 0: Heads
	FFN       int     `json:"ffn" yaml:"ffn"`           // 0: Llama's 8/3·dim rounded up to 64
	Ctx       int     `json:"ctx" yaml:"ctx"`           // context length written to the model (0: Seq)
	RopeTheta float64 `json:"rope-theta" yaml:"rope-theta"`
	Tied      bool    `json:"tied" yaml:"tied"` // output projection shares the embedding

	// Mixture of experts (moe.go): Experts > 0 makes every block's feed-forward a router over
	// that many SwiGLU experts of width ExpertFFN (0: FFN), ExpertsUsed of them per token (arch
	// llama: Mixtral's renormalised top-k; qwen2moe: Qwen2-MoE's, with its shared expert of
	// width FFN). MoEAuxCoef weighs the routers' load-balancing loss added to the loss (HF's
	// router_aux_loss_coef).
	Experts     int     `json:"experts,omitempty" yaml:"experts"`
	ExpertsUsed int     `json:"experts-used,omitempty" yaml:"experts-used"`
	ExpertFFN   int     `json:"expert-ffn,omitempty" yaml:"expert-ffn"`
	MoEAuxCoef  float64 `json:"moe-aux-loss-coef,omitempty" yaml:"moe-aux-loss-coef"`

	// Gemma 2/3 and Phi-3 (families.go; 0: the family's default): the sliding window of the
	// local layers, the attention and final-logit soft-caps, the query scalar (scores scaled by
	// 1/sqrt of it) and Gemma 3's period of global layers.
	Window         int     `json:"window,omitempty" yaml:"window"`
	AttnSoftcap    float64 `json:"attn-softcap,omitempty" yaml:"attn-softcap"`
	FinalSoftcap   float64 `json:"final-softcap,omitempty" yaml:"final-softcap"`
	QueryScalar    float64 `json:"query-scalar,omitempty" yaml:"query-scalar"`
	SlidingPattern int     `json:"sliding-pattern,omitempty" yaml:"sliding-pattern"`

	// Batching: each optimizer step sees GradAccum micro-batches of Batch×Seq tokens.
	Batch     int `json:"batch" yaml:"batch"`
	Seq       int `json:"seq" yaml:"seq"`
	GradAccum int `json:"grad-accum" yaml:"grad-accum"`
	Steps     int `json:"steps" yaml:"steps"`

	// Optimizer: decoupled AdamW (no decay on 1-D parameters), warmup then cosine decay from
	// LR to MinLR at the last step, gradients clipped to a global L2 norm of Clip (0: off).
	LR          float64 `json:"lr" yaml:"lr"`
	MinLR       float64 `json:"min-lr" yaml:"min-lr"`
	Warmup      int     `json:"warmup" yaml:"warmup"`
	WeightDecay float64 `json:"weight-decay" yaml:"weight-decay"`
	Beta1       float64 `json:"beta1" yaml:"beta1"`
	Beta2       float64 `json:"beta2" yaml:"beta2"`
	Eps         float64 `json:"eps" yaml:"eps"`
	Clip        float64 `json:"clip" yaml:"clip"`

	Seed        uint64 `json:"seed" yaml:"seed"`
	EvalEvery   int    `json:"eval-every" yaml:"eval-every"`     // 0: only at the end
	EvalBatches int    `json:"eval-batches" yaml:"eval-batches"` // validation batches per evaluation
	CkptEvery   int    `json:"ckpt-every" yaml:"ckpt-every"`     // 0: only at the end
	LogEvery    int    `json:"log-every" yaml:"log-every"`       // steps per progress line
	// MaxBadSteps is how many consecutive steps with a NaN/Inf loss or gradient norm (each
	// skipped) stop the run with a checkpoint; 0 means DefaultMaxBadSteps.
	MaxBadSteps int `json:"max-bad-steps,omitempty" yaml:"max-bad-steps"`
	Threads     int `json:"threads" yaml:"threads"`

	// Parallelism across the WORLD_SIZE ranks of a distributed run (docs/distributed-training.md):
	// a DP x PP x TP grid, tensor-parallel ranks adjacent, then data-parallel, then pipeline
	// (Megatron-LM's order). Batch is the global micro-batch: each data-parallel rank takes
	// Batch/DP of its rows, and the pipeline splits its share into MicroBatches.
	DP           int     `json:"dp" yaml:"dp"`                       // data-parallel ranks (0: world/(TP·PP))
	TP           int     `json:"tp" yaml:"tp"`                       // tensor-parallel ranks (0: 1)
	PP           int     `json:"pp" yaml:"pp"`                       // pipeline stages (0: 1)
	ZeroStage    int     `json:"zero-stage" yaml:"zero-stage"`       // 0 (DDP), 1, 2 or 3
	MicroBatches int     `json:"micro-batches" yaml:"micro-batches"` // pipeline micro-batches per batch (0: PP)
	PPSchedule   string  `json:"pp-schedule" yaml:"pp-schedule"`     // "1f1b" (default) or "naive"
	BucketMB     float64 `json:"bucket-mb" yaml:"bucket-mb"`         // DDP gradient bucket size in MiB (0: 4)
	TimeoutSec   float64 `json:"timeout" yaml:"timeout"`             // collective timeout in seconds (0: 60)

	// Recompute re-runs each block's forward during its backward instead of keeping the
	// block's activations (activation checkpointing): same results, about half the activation
	// memory, one more forward per step (HFU then exceeds MFU).
	Recompute bool `json:"recompute" yaml:"recompute"`

	// Mixed precision and loss spikes (precision.go, spike.go): Precision "bf16" runs the
	// matrix products on bf16 operands (fp32 master weights, optimizer state and
	// accumulation); SpikeThreshold k > 0 skips a step whose gradient norm exceeds k x the
	// median of the last SpikeWindow taken steps' norms; InjectSpike multiplies that step's
	// loss (and so its gradient) by 1000, for tests and demos.
	Precision      string  `json:"precision,omitempty" yaml:"precision"`
	SpikeThreshold float64 `json:"spike-threshold,omitempty" yaml:"spike-threshold"`
	SpikeWindow    int     `json:"spike-window,omitempty" yaml:"spike-window"`
	InjectSpike    int     `json:"inject-spike,omitempty" yaml:"inject-spike"`

	// Export at the end of the run ("" = none); ExportType is a convert weight type.
	ExportGGUF string `json:"export-gguf" yaml:"export-gguf"`
	ExportHF   string `json:"export-hf" yaml:"export-hf"`
	ExportType string `json:"export-type" yaml:"export-type"`
}

// DefaultConfig returns a complete configuration: a small model and llm.c-like optimizer
// settings.
func DefaultConfig() Config {
	return Config{
		Dim: 256, Layers: 4, Heads: 4, RopeTheta: 10000,
		Batch: 8, Seq: 256, GradAccum: 1, Steps: 1000,
		LR: 1e-3, MinLR: 1e-4, Warmup: 100, WeightDecay: 0.1,
		Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Clip: 1.0,
		Seed: 1337, EvalEvery: 100, EvalBatches: 8, LogEvery: 10, MoEAuxCoef: 0.01,
		Threads: runtime.NumCPU(),
	}
}

// Validate reports the first inconsistent setting.
func (c *Config) Validate() error {
	pos := []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"layers", c.Layers}, {"heads", c.Heads}, {"batch", c.Batch}, {"seq", c.Seq},
		{"grad-accum", c.GradAccum}, {"steps", c.Steps}, {"eval-batches", c.EvalBatches},
		{"log-every", c.LogEvery}, {"threads", c.Threads}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("train: --%s = %d, must be positive", p.name, p.v)
		}
	}
	nonneg := []struct {
		name string
		v    int
	}{{"kv-heads", c.KVHeads}, {"ffn", c.FFN}, {"ctx", c.Ctx}, {"warmup", c.Warmup},
		{"eval-every", c.EvalEvery}, {"ckpt-every", c.CkptEvery}, {"max-bad-steps", c.MaxBadSteps}}
	for _, p := range nonneg {
		if p.v < 0 {
			return fmt.Errorf("train: --%s = %d, must not be negative", p.name, p.v)
		}
	}
	if c.Dim%c.Heads != 0 {
		return fmt.Errorf("train: --dim %d is not a multiple of --heads %d", c.Dim, c.Heads)
	}
	if c.kvHeads() > c.Heads || c.Heads%c.kvHeads() != 0 {
		return fmt.Errorf("train: --heads %d is not a multiple of --kv-heads %d", c.Heads, c.kvHeads())
	}
	if (c.Dim/c.Heads)%2 != 0 {
		return fmt.Errorf("train: head size %d (dim/heads) is odd; RoPE rotates pairs", c.Dim/c.Heads)
	}
	if c.Ctx > 0 && c.Ctx < c.Seq {
		return fmt.Errorf("train: --ctx %d is shorter than --seq %d", c.Ctx, c.Seq)
	}
	if !(c.LR > 0) || c.MinLR < 0 || c.MinLR > c.LR {
		return fmt.Errorf("train: need 0 <= --min-lr (%g) <= --lr (%g) and --lr > 0", c.MinLR, c.LR)
	}
	if c.WeightDecay < 0 || c.Clip < 0 || !(c.Eps > 0) {
		return errors.New("train: --weight-decay and --clip must not be negative, --eps must be positive")
	}
	if c.Beta1 < 0 || c.Beta1 >= 1 || c.Beta2 < 0 || c.Beta2 >= 1 {
		return fmt.Errorf("train: --beta1 %g and --beta2 %g must be in [0, 1)", c.Beta1, c.Beta2)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("train: --rope-theta %g must be positive", c.RopeTheta)
	}
	if c.Arch != "" && model.FamilyOf(c.Arch) == nil {
		return fmt.Errorf("train: --arch %q is not a registered architecture", c.Arch)
	}
	if err := c.validatePrecision(); err != nil {
		return err
	}
	if err := c.validateExperts(); err != nil {
		return err
	}
	if err := c.validateFamily(); err != nil {
		return err
	}
	return c.validateParallel()
}

// validateParallel checks the distributed settings that do not depend on the world size (the
// grid itself is checked against it by NewParallel).
func (c *Config) validateParallel() error {
	for _, p := range []struct {
		name string
		v    int
	}{{"dp", c.DP}, {"tp", c.TP}, {"pp", c.PP}, {"micro-batches", c.MicroBatches}} {
		if p.v < 0 {
			return fmt.Errorf("train: --%s = %d, must not be negative", p.name, p.v)
		}
	}
	if c.ZeroStage < 0 || c.ZeroStage > 3 {
		return fmt.Errorf("train: --zero-stage %d: want 0 (DDP), 1, 2 or 3", c.ZeroStage)
	}
	if c.PPSchedule != "" && c.PPSchedule != "1f1b" && c.PPSchedule != "naive" {
		return fmt.Errorf("train: --pp-schedule %q: want 1f1b or naive", c.PPSchedule)
	}
	if c.BucketMB < 0 || c.TimeoutSec < 0 {
		return fmt.Errorf("train: --bucket-mb %g and --timeout %g must not be negative", c.BucketMB, c.TimeoutSec)
	}
	if c.DP > 0 && c.Batch%c.DP != 0 {
		return fmt.Errorf("train: --batch %d (the global micro-batch) is not a multiple of --dp %d", c.Batch, c.DP)
	}
	if c.TP > 1 {
		if c.Heads%c.TP != 0 || c.kvHeads()%c.TP != 0 || c.ffn()%c.TP != 0 {
			return fmt.Errorf("train: --tp %d must divide --heads %d, the kv heads %d and the ffn width %d",
				c.TP, c.Heads, c.kvHeads(), c.ffn())
		}
	}
	if c.PP > 1 && c.Layers < c.PP {
		return fmt.Errorf("train: --pp %d stages for %d layers: every stage needs a layer", c.PP, c.Layers)
	}
	return nil
}

func (c *Config) kvHeads() int {
	if c.KVHeads == 0 {
		return c.Heads
	}
	return c.KVHeads
}

// ffn is the feed-forward width: FFN, or Llama's 2/3·4·dim rounded up to a multiple of 64.
func (c *Config) ffn() int {
	if c.FFN > 0 {
		return c.FFN
	}
	f := 8 * c.Dim / 3
	return (f + 63) / 64 * 64
}

// ModelConfig is the network the run trains, for a vocabulary of vocab tokens.
func (c *Config) ModelConfig(vocab int) model.Config {
	ctx := c.Ctx
	if ctx == 0 {
		ctx = c.Seq
	}
	mc := model.Config{
		Arch: "llama", Dim: c.Dim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.kvHeads(),
		HeadDim: c.Dim / c.Heads, FFN: c.ffn(), Vocab: vocab, CtxLen: ctx,
		RopeTheta: c.RopeTheta, NormEps: 1e-5, Tied: c.Tied,
	}
	if c.Experts > 0 {
		mc.Experts, mc.ExpertsUsed, mc.ExpertsNorm, mc.ExpertFFN = c.Experts, c.ExpertsUsed, true, c.ExpertFFN
		if (c.Arch == "" || c.Arch == "llama") && c.ExpertFFN > 0 {
			// Mixtral's GGUF and config.json give the experts' width as the feed-forward's.
			mc.FFN, mc.ExpertFFN = c.ExpertFFN, 0
		}
	}
	if f := model.FamilyOf(c.Arch); f != nil && c.Arch != "llama" {
		mc.Arch, mc.NormEps = f.Arch, f.NormEps
		c.setFamily(&mc)
		if f.Fix != nil {
			f.Fix(&mc)
		}
	}
	return mc
}

// TokensPerStep is Batch·Seq·GradAccum.
func (c *Config) TokensPerStep() int64 { return int64(c.Batch) * int64(c.Seq) * int64(c.GradAccum) }
