// This file implements the tensor-parallel group as nn sees it (Comm), the typed error a failed
// collective raises inside Forward/Backward, and the shard helpers: which part of each full
// tensor a tensor-parallel rank holds (Megatron-LM, Shoeybi et al. 2019, section 3). Column-
// parallel tensors (attn_q/k/v, ffn_gate/up with their biases, and the vocab-parallel token_embd
// and output) are split by rows, row-parallel tensors (attn_output, ffn_down) by columns, norms
// (Qwen3's per-head q/k norms too) are replicated, as graph.ShardTP splits the graph.
// Every split is into TP equal contiguous blocks, rank r holding block r, so query heads, KV
// heads, FFN columns and vocabulary rows stay whole and in order.
package nn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/model"
)

// Comm is a tensor-parallel process group: Size ranks, this process being Rank. Both
// reductions are collective: every rank of the group calls them in the same order with
// buffers of the same length, and each returns with x holding, element by element, the sum
// (or the maximum) of all ranks' x, identical on every rank. A non-nil error means the group
// is broken (a peer died or timed out); the caller must not use the group again. nn never
// imports package comm: train/dist adapts *comm.Group to this interface.
type Comm interface {
	Rank() int
	Size() int
	AllReduceSum(x []float32) error
	AllReduceMax(x []float32) error
}

// CommError is the value Forward and Backward panic with when a tensor-parallel collective
// fails; CatchComm turns it back into an error.
type CommError struct {
	Op  string // which reduction: "embedding", "attn_output", "ffn_down", "loss max", ...
	Err error
}

func (e *CommError) Error() string { return fmt.Sprintf("nn: tensor-parallel %s: %v", e.Op, e.Err) }
func (e *CommError) Unwrap() error { return e.Err }

// CatchComm, deferred, recovers a *CommError panic into *err; other panics continue:
//
//	func step() (err error) { defer nn.CatchComm(&err); m.Forward(...); m.Backward(); return nil }
func CatchComm(err *error) {
	if r := recover(); r != nil {
		var ce *CommError
		if e, ok := r.(error); ok && errors.As(e, &ce) {
			*err = ce
			return
		}
		panic(r)
	}
}

// Split is how a tensor is divided between tensor-parallel ranks.
type Split int

const (
	Replicated Split = iota // every rank holds the whole tensor (norm weights)
	SplitRows               // rank r holds rows [r·R/TP, (r+1)·R/TP) of an (R, C) tensor
	SplitCols               // rank r holds columns [r·C/TP, (r+1)·C/TP) of every row
)

// SplitOf returns how the tensor of GGUF name is split under tensor parallelism.
func SplitOf(name string) Split {
	switch {
	case name == "token_embd.weight" || name == "output.weight":
		return SplitRows
	case strings.HasSuffix(name, ".weight") || strings.HasSuffix(name, ".bias"):
		base := name[:strings.LastIndexByte(name, '.')]
		for _, s := range []string{".attn_q", ".attn_k", ".attn_v", ".ffn_gate", ".ffn_up"} {
			if strings.HasSuffix(base, s) {
				return SplitRows // a column-parallel matrix, or its bias, split like its rows
			}
		}
	}
	if strings.HasSuffix(name, ".attn_output.weight") || strings.HasSuffix(name, ".ffn_down.weight") {
		return SplitCols
	}
	return Replicated
}

// ShardShape is the shape of one rank's part, over size ranks, of the tensor name of shape full.
func ShardShape(name string, full []int, size int) []int {
	s := append([]int(nil), full...)
	switch SplitOf(name) {
	case SplitRows:
		s[0] /= size
	case SplitCols:
		s[len(s)-1] /= size
	}
	return s
}

// Shard copies rank's part of the full tensor name (row-major, of the given shape) into dst,
// which holds numel(ShardShape(name, shape, size)) values (all of them when Replicated).
func Shard(dst, full []float32, name string, shape []int, rank, size int) {
	shardCopy(dst, full, name, shape, rank, size, false)
}

// Unshard copies rank's part src back into its place in the full tensor name (of shape):
// calling it for every rank reassembles the tensor (for checkpoints and export).
func Unshard(full, src []float32, name string, shape []int, rank, size int) {
	shardCopy(src, full, name, shape, rank, size, true)
}

func shardCopy(part, full []float32, name string, shape []int, rank, size int, back bool) {
	n := numel(shape)
	if len(full) != n || len(part) != numel(ShardShape(name, shape, size)) || rank < 0 || rank >= size {
		panic(fmt.Sprintf("nn: shard %d/%d of %s %v: %d full and %d part values", rank, size, name, shape, len(full), len(part)))
	}
	cp := func(p, f []float32) {
		if back {
			copy(f, p)
		} else {
			copy(p, f)
		}
	}
	switch SplitOf(name) {
	case Replicated:
		cp(part, full)
	case SplitRows:
		k := n / size
		cp(part, full[rank*k:(rank+1)*k])
	case SplitCols:
		c := shape[len(shape)-1]
		k := c / size
		for i := 0; i < n/c; i++ {
			cp(part[i*k:(i+1)*k], full[i*c+rank*k:i*c+(rank+1)*k])
		}
	}
}

// TPConfig returns the configuration one of size tensor-parallel ranks computes with: query
// heads, KV heads, FFN width and vocabulary divided by size (the tensor shapes of its shards).
// It refuses a size that does not divide all four.
func TPConfig(cfg model.Config, size int) (model.Config, error) {
	if size < 1 {
		return cfg, fmt.Errorf("nn: tensor-parallel size %d must be at least 1", size)
	}
	for _, d := range []struct {
		what string
		n    int
	}{{"query heads", cfg.Heads}, {"KV heads", cfg.KVHeads}, {"FFN width", cfg.FFN}, {"vocabulary", cfg.Vocab}} {
		if d.n%size != 0 {
			return cfg, fmt.Errorf("nn: tensor-parallel size %d does not divide the %s (%d)", size, d.what, d.n)
		}
	}
	lc := cfg
	lc.Heads, lc.KVHeads, lc.FFN, lc.Vocab = cfg.Heads/size, cfg.KVHeads/size, cfg.FFN/size, cfg.Vocab/size
	return lc, nil
}

// localConfig is the configuration a rank of tp computes with: cfg itself without tensor
// parallelism (tp nil or of size 1), TPConfig's otherwise. It refuses a rank outside the group.
func localConfig(cfg model.Config, tp Comm) (model.Config, error) {
	if tp == nil || tp.Size() == 1 {
		return cfg, nil
	}
	if r := tp.Rank(); r < 0 || r >= tp.Size() {
		return cfg, fmt.Errorf("nn: tensor-parallel rank %d outside a group of %d", r, tp.Size())
	}
	return TPConfig(cfg, tp.Size())
}
