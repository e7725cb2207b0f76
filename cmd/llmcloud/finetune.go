// The finetune command: supervised fine-tuning of a model (GGUF or Hugging Face) on chat
// examples in JSONL (train/sft), all weights (--method full) or low-rank adapters on the frozen
// base (--method lora), through the trainer of `llmcloud train` (progress, log.jsonl, loss.png,
// validation, checkpoints, --resume). `finetune eval` measures exact-match accuracy by greedy
// generation (finetune_eval.go); `data sft-tasks` writes the demonstration dataset.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/nn"
	"github.com/llmcloud/llmcloud/train/sft"
)

func init() {
	register("finetune", "supervised fine-tuning on chat JSONL, full or LoRA (finetune eval: exact-match accuracy by greedy generation)", runFinetune)
}

type finetuneFlags struct {
	model, data, valData, out, method, targets, resume, exportType string
	rank                                                           int
	alpha, dropout                                                 float64
	merge, noPack                                                  bool
}

func runFinetune(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "eval" {
		return runFinetuneEval(args[1:], stdout, stderr)
	}
	fs := newFlags("finetune", stderr)
	var f finetuneFlags
	fs.StringVar(&f.model, "model", "", "base model: GGUF file or Hugging Face directory (default: the built-in model)")
	fs.StringVar(&f.data, "data", "", "training examples, JSONL: {\"messages\":[{\"role\",\"content\"}...]} or {\"instruction\",\"input\",\"output\"}")
	fs.StringVar(&f.valData, "val-data", "", "validation examples (same formats): validation loss every --eval-every steps")
	fs.StringVar(&f.out, "out", "", "run directory: ckpt/, log.jsonl, loss.png, and model.gguf (full) or adapter/ (+ merged.gguf with --merge) (lora)")
	fs.StringVar(&f.method, "method", "full", "full (every weight) or lora (low-rank adapters on the frozen base)")
	fs.IntVar(&f.rank, "lora-r", 8, "LoRA rank")
	fs.Float64Var(&f.alpha, "lora-alpha", 16, "LoRA alpha (the product is scaled by alpha/r)")
	fs.Float64Var(&f.dropout, "lora-dropout", 0, "LoRA dropout: probability of zeroing the adapters' input in training (PEFT's lora_dropout; never at evaluation or serving)")
	fs.StringVar(&f.targets, "lora-target", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "LoRA target modules (PEFT names)")
	fs.BoolVar(&f.merge, "merge", false, "lora: also write RUN/merged.gguf, the base with the adapter merged in")
	fs.BoolVar(&f.noPack, "no-pack", false, "one example per row (default: pack short examples into each row, attending within each)")
	fs.StringVar(&f.resume, "resume", "", "continue from a checkpoint directory, or \"latest\" of --out")
	fs.StringVar(&f.exportType, "export-type", "f32", "weight type of the written GGUF (f32, f16, q8_0, ...)")
	cfg := train.DefaultConfig()
	cfg.Steps, cfg.LR, cfg.MinLR, cfg.Warmup, cfg.WeightDecay, cfg.Seq, cfg.EvalEvery = 300, 0, 0, 20, 0, 256, 50
	fs.IntVar(&cfg.Steps, "steps", cfg.Steps, "optimizer steps")
	fs.Float64Var(&cfg.LR, "lr", 0, "peak learning rate (default: 1e-4 full, 1e-3 lora), warmup then cosine to lr/10")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "warmup steps")
	fs.Float64Var(&cfg.WeightDecay, "weight-decay", cfg.WeightDecay, "decoupled AdamW weight decay")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "rows per step")
	fs.IntVar(&cfg.Seq, "seq", cfg.Seq, "tokens per row (at most the model's context)")
	fs.IntVar(&cfg.GradAccum, "grad-accum", cfg.GradAccum, "micro-batches per step")
	fs.IntVar(&cfg.EvalEvery, "eval-every", cfg.EvalEvery, "validation every N steps (with --val-data)")
	fs.IntVar(&cfg.CkptEvery, "ckpt-every", 0, "checkpoint every N steps (one is always written at the end)")
	fs.IntVar(&cfg.LogEvery, "log-every", cfg.LogEvery, "steps per progress line")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "compute threads")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the adapters' initialisation and of the rows' order")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud finetune [--model BASE] --data FILE.jsonl --out RUN [--method full|lora] [flags]")
		fmt.Fprintln(stderr, "       llmcloud finetune eval [--model MODEL] --data TEST.jsonl")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if f.data == "" || f.out == "" {
		return usagef("finetune needs --data and --out")
	}
	if f.method != "full" && f.method != "lora" {
		return usagef("--method %q: want full or lora", f.method)
	}
	if f.dropout < 0 || f.dropout >= 1 {
		return usagef("--lora-dropout %g: want a probability in [0, 1)", f.dropout)
	}
	if cfg.LR == 0 {
		cfg.LR = map[string]float64{"full": 1e-4, "lora": 1e-3}[f.method]
	}
	cfg.MinLR, cfg.Out = cfg.LR/10, f.out
	return finetune(f, cfg, fs, stdout, stderr)
}

// openBase opens the base model (the built-in one when path is "").
func openBase(path string) (*loader.Bundle, error) {
	if path == "" {
		p, err := defaultmodel.Path()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return loader.Open(path, loader.Options{})
}

// baseWeights reads every trained tensor of b: as F32 (an F32 tensor in place, others
// dequantized), except with keep the
// matrices stored in another type (Q8_0, Q4_K, F16, ...), which stay as they are (QLoRA: the
// frozen base is read by the quantized kernels). It reports the types met.
func baseWeights(b *loader.Bundle, keep bool) (map[string][]float32, map[string]*tensor.Tensor, map[string]int, error) {
	ws, qs, types := map[string][]float32{}, map[string]*tensor.Tensor{}, map[string]int{}
	for name := range nn.TrainedShapes(&b.Model.Config) {
		t := b.Model.Weights[name]
		if t == nil {
			return nil, nil, nil, fmt.Errorf("finetune: base %s has no tensor %s", b.Path, name)
		}
		types[t.Type.String()]++
		if keep && len(t.Shape) == 2 && t.Type != tensor.F32 {
			qs[name] = t
			continue
		}
		if v := kernels.F32View(t.Data); t.Type == tensor.F32 && len(v) == t.Elems() {
			ws[name] = v // read in place (the file's pages), never written: no second copy
			continue
		}
		w, err := t.Float32()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("finetune: base %s: %s: %w", b.Path, name, err)
		}
		ws[name] = w
	}
	return ws, qs, types, nil
}

// dequantized is base with the stored-type matrices of quant dequantized (for --merge).
func dequantized(base map[string][]float32, quant map[string]*tensor.Tensor) (map[string][]float32, error) {
	out := maps.Clone(base)
	for name, t := range quant {
		w, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("finetune: %s: %w", name, err)
		}
		out[name] = w
	}
	return out, nil
}

// trainConfigFor fills cfg's model shape from the base's and checks the trainer builds it.
func trainConfigFor(cfg *train.Config, mc model.Config) error {
	cfg.Arch, cfg.Dim, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.FFN = mc.Arch, mc.Dim, mc.Layers, mc.Heads, mc.KVHeads, mc.FFN
	cfg.Ctx, cfg.RopeTheta, cfg.Tied = mc.CtxLen, mc.RopeTheta, mc.Tied
	if cfg.Seq > mc.CtxLen {
		return usagef("--seq %d exceeds the model's context %d", cfg.Seq, mc.CtxLen)
	}
	got := cfg.ModelConfig(mc.Vocab)
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", mc) {
		return fmt.Errorf("finetune: the trainer cannot build this base's architecture: base %+v, trainer %+v", mc, got)
	}
	return cfg.Validate()
}

// sftData reads, renders and packs path's examples into B x T batches.
func sftData(path string, r *sft.Renderer, T, B int, pack bool, seed uint64, pad int32) (*sft.Batches, *sft.Packed, error) {
	ex, err := sft.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	seqs := make([]sft.Seq, len(ex))
	for i, e := range ex {
		ids, mask, err := r.Encode(e.Messages)
		if err != nil {
			return nil, nil, fmt.Errorf("sft: %s:%d: %w", e.File, e.Line, err)
		}
		seqs[i] = sft.Seq{IDs: ids, Mask: mask}
	}
	p, err := sft.Pack(seqs, T, pack, pad)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := sft.NewBatches(p, B, seed)
	return b, p, err
}

func finetune(f finetuneFlags, cfg train.Config, fs *flag.FlagSet, stdout, stderr io.Writer) error {
	b, err := openBase(f.model)
	if err != nil {
		return err
	}
	defer b.Close()
	mc := b.Model.Config
	if err := trainConfigFor(&cfg, mc); err != nil {
		return err
	}
	base, quant, types, err := baseWeights(b, f.method == "lora")
	if err != nil {
		return err
	}
	var tl []string
	for t, n := range types {
		tl = append(tl, fmt.Sprintf("%d %s", n, t))
	}
	slices.Sort(tl)
	switch {
	case len(quant) > 0:
		fmt.Fprintf(stderr, "base %s (%s): %s tensors; the %d frozen matrices stay in their stored type (QLoRA: quantized forward, dx from the quantized blocks)\n",
			b.Path, b.Name, strings.Join(tl, ", "), len(quant))
	default:
		fmt.Fprintf(stderr, "base %s (%s): %s tensors, read as F32\n", b.Path, b.Name, strings.Join(tl, ", "))
	}
	r := &sft.Renderer{Template: b.ChatTemplate, Tok: b.Tok}
	if b.ChatTemplate == "" {
		fmt.Fprintln(stderr, "the model has no chat template: using the server's plain User:/Assistant: transcript")
	}
	pad := int32(max(b.Tok.EOS(), 0))
	trainB, tp, err := sftData(f.data, r, cfg.Seq, cfg.Batch, !f.noPack, cfg.Seed, pad)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "data %s: %d examples in %d rows of %d (%.0f%% filled, %d trained tokens, up to %d examples a row, %d truncated)\n",
		f.data, tp.Examples, tp.Rows, cfg.Seq, 100*float64(tp.Tokens)/float64(tp.Rows*cfg.Seq), tp.Trained, tp.DocsPerRowMax, tp.Truncated)
	d := train.Data{Train: trainB, Vocab: mc.Vocab}
	if f.valData != "" {
		vb, vp, err := sftData(f.valData, r, cfg.Seq, cfg.Batch, !f.noPack, 0, pad)
		if err != nil {
			return err
		}
		d.Val, cfg.EvalBatches = vb, (vp.Rows+cfg.Batch-1)/cfg.Batch
	}
	var ad *nn.Adapter
	if f.method == "lora" {
		ad = &nn.Adapter{Rank: f.rank, Alpha: f.alpha, Base: base, Quant: quant, Dropout: f.dropout}
		for _, m := range strings.Split(f.targets, ",") {
			g, ok := lora.Modules[strings.TrimSpace(m)]
			if !ok {
				return usagef("--lora-target %q: want some of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", m)
			}
			ad.Targets = append(ad.Targets, g)
		}
		d.Adapter = ad
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	t, err := train.New(cfg, d, log)
	if err != nil {
		return err
	}
	defer t.Close()
	if ad == nil { // full: start from the base's weights
		for _, p := range t.Net.Params() {
			copy(p.W, base[p.Name])
		}
	}
	if f.resume != "" {
		dir, err := train.ResolveCheckpoint(f.resume, f.out)
		if err != nil {
			return err
		}
		ck, err := train.LoadCheckpoint(dir)
		if err != nil {
			return err
		}
		if err := t.Restore(ck); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "resumed from %s at step %d\n", ck.Dir, t.StepNum())
	}
	fmt.Fprintf(stderr, "method %s: %d trainable parameters\n", f.method, t.Net.NumParams())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sum, err := t.Run(ctx, train.RunOptions{Progress: stderr, Bar: isTerminal(stderr)})
	if err != nil {
		if sum != nil && errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted after step %d (a checkpoint was saved; continue with --resume latest)", sum.Steps)
		}
		return err
	}
	fmt.Fprintf(stdout, "fine-tuned %d steps (%s) in %s: train loss %.4f", sum.Steps, f.method, time.Since(start).Round(time.Second), sum.TrainLoss)
	if sum.ValLoss > 0 {
		fmt.Fprintf(stdout, ", val loss %.4f", sum.ValLoss)
	}
	fmt.Fprintf(stdout, "\ncheckpoint %s\n", sum.Checkpoint)
	if f.merge && len(quant) > 0 {
		if base, err = dequantized(base, quant); err != nil {
			return err
		}
	}
	return writeFinetuned(f, t, b, base, ad, stdout)
}

// writeFinetuned writes the result: RUN/model.gguf (full), or RUN/adapter/ in PEFT's format and
// with --merge RUN/merged.gguf (lora).
func writeFinetuned(f finetuneFlags, t *train.Trainer, b *loader.Bundle, base map[string][]float32, ad *nn.Adapter, stdout io.Writer) error {
	mc := b.Model.Config
	ws := map[string][]float32{}
	shapes := map[string][]int{}
	for _, p := range t.Net.Params() {
		ws[p.Name], shapes[p.Name] = p.W, p.Shape
	}
	writeGGUF := func(path string, weights map[string][]float32) error {
		p, err := train.Plan(mc, weights, "")
		if err != nil {
			return err
		}
		p.Name, p.Vocab, p.ChatTemplate = b.Name+"-sft", b.Tok.Vocab(), b.ChatTemplate
		if err := convert.WriteGGUF(path, p, convert.Options{Type: f.exportType}); err != nil {
			return fmt.Errorf("finetune: %s: %w", path, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
		return nil
	}
	if ad == nil {
		return writeGGUF(filepath.Join(f.out, "model.gguf"), ws)
	}
	dir := filepath.Join(f.out, "adapter")
	la, err := sft.ToLoRA(filepath.Base(f.out), &sft.PEFTAdapter{Config: mc, Base: b.Path, Rank: ad.Rank, Alpha: ad.Alpha, Dropout: f.dropout,
		Targets: ad.Targets, Tensors: ws, ShapeOf: shapes})
	if err != nil {
		return err
	}
	if err := lora.WritePEFT(dir, la, &mc); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (adapter_config.json, adapter_model.safetensors)\n", dir)
	if !f.merge {
		return nil
	}
	return writeGGUF(filepath.Join(f.out, "merged.gguf"), sft.Merge(base, mc.Shapes(), ws, ad.Rank, ad.Scale()))
}
