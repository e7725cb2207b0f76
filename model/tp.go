// This file is the model of one rank of a tensor-parallel group (NewTP): the serving graph
// sharded by graph.ShardTPServing (Megatron's column/row splits, the vocab-parallel embedding
// and output, logits gathered whole), bound to this rank's blocks of the weights only, and a
// paged KV cache holding only this rank's KV heads.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/tensor"
)

// tpArchs are the families whose graph graph.ShardTP knows how to shard (Mixtral is llama
// with experts).
var tpArchs = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true, "qwen2moe": true, "qwen3moe": true}

// CheckTP reports why cfg cannot be split over size tensor-parallel ranks with o: a family
// ShardTP does not know, or a size that does not divide the query heads, KV heads,
// feed-forward width, vocabulary, or a mixture's experts (with o.ExpertParallel) or their
// feed-forward widths (without), each named with its value. Size 1 is always fine.
func CheckTP(cfg *Config, size int, o graph.TPOptions) error {
	if size < 1 {
		return fmt.Errorf("tensor-parallel size %d < 1", size)
	}
	if size == 1 {
		return nil
	}
	switch {
	case !tpArchs[cfg.Arch]:
		return fmt.Errorf("tensor parallelism serves the llama (and Mixtral), mistral, qwen2, qwen3, qwen2moe and qwen3moe families, not %s", cfg.Arch)
	case cfg.KVLoraRank > 0 || cfg.SlidingWindow > 0 || cfg.LongRope != nil:
		return fmt.Errorf("tensor parallelism does not serve latent attention, sliding windows or LongRoPE yet")
	}
	type dim struct {
		what string
		n    int
	}
	dims := []dim{{"attention heads", cfg.Heads}, {"KV heads", cfg.KVHeads}, {"vocabulary", cfg.Vocab}}
	if cfg.Experts == 0 || cfg.DenseLead > 0 {
		dims = append(dims, dim{"feed-forward width", cfg.FFN})
	}
	if cfg.Experts > 0 {
		if o.ExpertParallel {
			dims = append(dims, dim{"experts", cfg.Experts})
		} else {
			f := cfg.ExpertFFN
			if f == 0 {
				f = cfg.FFN
			}
			dims = append(dims, dim{"experts' feed-forward width", f})
		}
		if cfg.SharedFFN > 0 {
			dims = append(dims, dim{"shared expert's feed-forward width", cfg.SharedFFN})
		}
	}
	for _, d := range dims {
		if d.n%size != 0 {
			return fmt.Errorf("tensor-parallel size %d does not divide the %s (%d)", size, d.what, d.n)
		}
	}
	return nil
}

// NewTP is New for rank tp.Rank() of a tensor-parallel group of tp.Size() ranks. ws are the
// whole model's weights, validated against cfg as New does; the serving graph binds only this
// rank's block of each split weight (a view of a row block, a copy of a column block), so of a
// memory-mapped file only those bytes are read. Every rank must run the same batches
// (ForwardBatch) in the same order: the graph's all-reduces and the logits' all-gather run
// over tp. The model's KV caches hold this rank's KV heads.
func NewTP(cfg Config, ws map[string]*tensor.Tensor, tp exec.Collective) (*Model, error) {
	if err := CheckTP(&cfg, tp.Size(), graph.TPOptions{}); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return newModel(cfg, ws, Part{TP: tp}, nil)
}

// LoadGGUFTP is LoadGGUF for one rank of the tensor-parallel group tp (NewTP): this rank's
// blocks of f's tensors are copied into an anonymous mapping and, when f is a mapping (Open),
// the file's pages are released from the process (mmap.Release), so the rank's resident
// weights are its shard (tp_arena.go).
func LoadGGUFTP(f *gguf.File, tp exec.Collective) (*Model, error) {
	return LoadGGUFPart(f, Part{TP: tp})
}

// TPSize is the number of tensor-parallel ranks m is one of (1: the whole model).
func (m *Model) TPSize() int {
	if m.tp == nil {
		return 1
	}
	return m.tp.Size()
}

// cacheConfig is m's configuration as far as its KV caches go: this rank's KV heads and its
// stage's layers.
func (m *Model) cacheConfig() *Config {
	lo, hi := m.Layers()
	if m.TPSize() == 1 && hi-lo == m.Config.Layers {
		return &m.Config
	}
	c := m.Config
	c.Heads /= m.TPSize()
	c.KVHeads /= m.TPSize()
	c.Layers = hi - lo
	return &c
}

// cacheDims are the widths of this rank's K and V rows.
func (m *Model) cacheDims() (k, v int) { return m.cacheConfig().CacheDims() }

// WeightBytes are the bytes of the weights m's forward binds: with tensor parallelism, this
// rank's blocks (and the replicated norms), without it the whole model's (1-d weights counted
// as the f32 copies the executor reads).
func (m *Model) WeightBytes() int64 {
	var n int64
	for _, t := range m.sws {
		if t != nil {
			n += int64(len(t.Data))
		}
	}
	return n
}

// CheckTPTensor reports why t cannot be split over size tensor-parallel ranks with o (before
// any rank loads it): a split dimension size does not divide, or a column block that is not
// whole quantization blocks.
func CheckTPTensor(t *tensor.Tensor, size int, o graph.TPOptions) error {
	_, err := tpShard(t, 0, size, o, nil, true)
	return err
}

// tpShard is this rank's block of the weight t (graph.TPSplitDim with o), t itself when
// replicated. A block that is one contiguous run of t's bytes (rows of a matrix, a block of
// experts) is a view of t, any other (columns; each expert's rows or columns) a copy; with an
// arena every block and replicated weight is copied into it.
func tpShard(t *tensor.Tensor, rank, size int, o graph.TPOptions, a *weightArena, checkOnly bool) (*tensor.Tensor, error) {
	if t == nil || size == 1 || graph.TPSplitDim(t.Name, o) < 0 {
		return a.copyOf(t), nil
	}
	d := graph.TPSplitDim(t.Name, o)
	if t.Zero != nil || len(t.Shape) == 0 || len(t.Shape) > 3 || (len(t.Shape) > 1 && d >= len(t.Shape)) {
		return nil, fmt.Errorf("model: tensor-parallel shard of %s (%s %v) is not supported", t.Name, t.Type, t.Shape)
	}
	if t.Shape[min(d, len(t.Shape)-1)]%size != 0 {
		return nil, fmt.Errorf("model: tensor-parallel size %d does not divide %s %v", size, t.Name, t.Shape)
	}
	s := *t
	s.Shape = append([]int(nil), t.Shape...)
	if len(t.Shape) == 1 { // a bias of a column-parallel matmul
		k := t.Shape[0] / size
		s.Shape[0] = k
		b, err := tensor.ByteSize(t.Type, []int{k})
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", t.Name, err)
		}
		s.Data = t.Data[rank*b : (rank+1)*b]
		return a.copyOf(&s), s.Check()
	}
	last := len(t.Shape) - 1
	C := t.Shape[last]
	rb, err := t.Type.RowBytes(C)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", t.Name, err)
	}
	rows := len(t.Data) / rb // every row of every expert
	if d < last {
		// Within each of the outer indexes (the experts, for an expert's rows), this rank's
		// block of dimension d: k units of unit bytes each.
		outer, unit := 1, rb
		for _, n := range t.Shape[:d] {
			outer *= n
		}
		for _, n := range t.Shape[d+1 : last] {
			unit *= n
		}
		k := t.Shape[d] / size
		s.Shape[d] = k
		if outer == 1 {
			s.Data = t.Data[rank*k*unit : (rank+1)*k*unit]
			return a.copyOf(&s), s.Check()
		}
		if checkOnly {
			return t, nil
		}
		s.Data = a.allocOrMake(outer * k * unit)
		for i := range outer {
			src := t.Data[(i*t.Shape[d]+rank*k)*unit:]
			copy(s.Data[i*k*unit:(i+1)*k*unit], src[:k*unit])
		}
		return &s, s.Check()
	}
	k := C / size // columns: this rank's part of every row, copied
	kb, err := t.Type.RowBytes(k)
	if err != nil || kb*size != rb {
		return nil, fmt.Errorf("model: tensor-parallel size %d: %s's %d columns per rank are not whole %s blocks", size, t.Name, k, t.Type)
	}
	if checkOnly {
		return t, nil
	}
	s.Shape[last] = k
	s.Data = a.allocOrMake(rows * kb)
	for r := range rows {
		copy(s.Data[r*kb:(r+1)*kb], t.Data[r*rb+rank*kb:r*rb+(rank+1)*kb])
	}
	return &s, s.Check()
}
