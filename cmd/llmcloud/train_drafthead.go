// The draft-head trainer: llmcloud train draft-head --model TARGET.gguf --data DIR --out FILE
// trains Medusa-1 draft heads (package train/drafthead) on a frozen target from its own
// hidden states and writes them as a small GGUF that the learned-head proposer loads.
package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/spec"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/drafthead"
)

func runTrainDraftHead(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train draft-head", stderr)
	target := fs.String("model", "", "the frozen target model (GGUF)")
	dir := fs.String("data", "", "prepared token shards (llmcloud data prepare) in the target's vocabulary")
	out := fs.String("out", "", "write the heads to this GGUF file")
	var o drafthead.Options
	fs.IntVar(&o.Heads, "heads", 3, "draft heads K (head j guesses the token j+2 places after the hidden state's row)")
	fs.IntVar(&o.Steps, "steps", 200, "optimizer steps, one window of --seq-len tokens through the target each")
	fs.IntVar(&o.SeqLen, "seq-len", 256, "tokens per window (at most the target's context)")
	fs.Float64Var(&o.LR, "lr", 1e-3, "peak learning rate (linear warm-up, cosine decay to a tenth)")
	fs.IntVar(&o.Warmup, "warmup", 0, "warm-up steps (0: steps/20)")
	fs.Float64Var(&o.WeightDecay, "weight-decay", 0, "AdamW weight decay of the head matrices")
	fs.IntVar(&o.Windows, "windows", 0, "run the target over only this many training windows, keep their hidden states in memory and cycle the steps over them (0: a fresh window per step)")
	fs.IntVar(&o.ValWindows, "val-windows", 16, "validation windows of the data's val split")
	fs.StringVar(&o.Labels, "labels", "target", "what the heads learn: target (the target's own greedy tokens: what greedy verification accepts) or data (the data's tokens)")
	fs.BoolVar(&o.TokenInput, "token-input", true, "give each head the embedding of the token before the one it guesses (drafts chain, Hydra-like; twice the parameters); --token-input=false: plain Medusa-1")
	fs.IntVar(&o.LogEvery, "log-every", 10, "progress line every N steps")
	accPrompts := fs.Int("accept-prompts", 8, "after training, simulate greedy speculation on the target's continuations of this many val prompts (0: skip)")
	accLen := fs.Int("accept-prompt-len", 32, "tokens per acceptance prompt")
	accGen := fs.Int("accept-tokens", 128, "greedy tokens generated per acceptance prompt")
	typ := fs.String("type", "f32", "matrix type of the file: f32 or f16")
	threads := fs.Int("threads", 0, "worker threads (0: all cores)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud train draft-head --model TARGET.gguf --data DIR --out FILE [--heads K] [--steps N] [flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	switch {
	case *target == "" || *dir == "" || *out == "":
		return usagef("give --model TARGET.gguf, --data DIR and --out FILE")
	case o.Heads < 1 || o.Heads > 16:
		return usagef("--heads %d: want 1..16", o.Heads)
	case o.Steps < 0:
		return usagef("--steps %d must not be negative", o.Steps)
	case *accPrompts < 0 || *accLen < 1 || *accGen < 2:
		return usagef("--accept-prompts must not be negative, --accept-prompt-len positive, --accept-tokens at least 2")
	case *typ != "f32" && *typ != "f16":
		return usagef("--type %q: want f32 or f16", *typ)
	case *threads < 0:
		return usagef("--threads %d must not be negative", *threads)
	}
	m, err := model.OpenGGUF(*target)
	if err != nil {
		return err
	}
	defer m.Close()
	if *threads > 0 {
		m.Pool = kernels.NewPool(*threads)
	}
	o.Log = stdout
	name := strings.TrimSuffix(filepath.Base(*target), filepath.Ext(*target))
	head, rep, err := drafthead.Train(m, name, *dir, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	dt := tensor.F32
	if *typ == "f16" {
		dt = tensor.F16
	}
	if err := head.SaveAs(*out, dt); err != nil {
		return err
	}
	if *accPrompts > 0 {
		prompts, err := drafthead.ValPrompts(*dir, *accPrompts, *accLen)
		if err != nil {
			return err
		}
		pool := m.Pool
		if pool == nil {
			pool = kernels.Default // as the target's forward
		}
		p, err := spec.NewHeadProposer(head, m, pool)
		if err != nil {
			return err
		}
		acc, err := drafthead.MeasureAcceptance(m, p, head.K(), prompts, *accGen)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, acc)
	}
	fmt.Fprintf(stdout, "wrote %s: %d heads for %s (dim %d, vocab %d)\n", *out, head.K(), name, head.Dim, head.Vocab)
	return nil
}
