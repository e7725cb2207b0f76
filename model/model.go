// This file implements Model: weights validated against a Config, and the RoPE they call for.
package model

import (
	"fmt"
	"slices"
	"sort"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// RopeFreqsName is the optional tensor of per-frequency RoPE divisors ([HeadDim/2], F32) that
// Llama 3 GGUF files carry.
const RopeFreqsName = "rope_freqs.weight"

// Model is a loaded network. Weights maps GGUF tensor names to tensors (which may alias a
// memory-mapped file: keep the file open while the model is used).
type Model struct {
	Config  Config
	Weights map[string]*tensor.Tensor
	// Pool runs the kernels; nil means kernels.Default. Set kernels.Serial for the
	// single-threaded reference path.
	Pool *kernels.Pool
	// KVCacheDType is the storage type of the KV caches made from the model (NewCache,
	// NewPagedKV; kvdtype.go): f32, the zero value, or f16, bf16, q8_0, fp8. Set it with
	// SetKVCacheDType before making them.
	KVCacheDType kernels.KVDType
	// OnForward, when set, is called by ForwardBatch with each batch once it is checked and
	// just before it runs; an error fails the forward. Tensor-parallel serving's rank 0 sends
	// the batch to the other ranks there (package engine/dist), which run it too.
	OnForward func(seqs []BatchSeq) error
	// Pipe, when set on a pipeline stage before the last (Part: rank 0's first stage),
	// connects it to the rest of the pipeline: ForwardBatch sends the stage's output down it
	// and returns the logits it receives (pipeline.go).
	Pipe StagePipe
	// MicroBatches is how many micro-batches of whole sequences ForwardBatch splits a batch
	// into on a Pipe (0 or 1: none), so the stages work on several at once.
	MicroBatches int

	rope   *kernels.Rope
	closer func() error
	sg     *graph.Graph              // the serving graph (serving.go)
	sws    map[string]*tensor.Tensor // the weights it binds
	tp     exec.Collective           // the tensor-parallel group of a NewTP model (tp.go), else nil
	part   Part                      // the part of a distributed group's model (pipeline.go)
	image  []byte                    // the file mapping Weights alias (LoadGGUFPart), else nil
	arena  *weightArena              // a serving rank's copies of its weights (tp_arena.go)
	// expertPacks are the expert slices registered for Q8_0/Q4_0 packs (experts_pack.go)
	expertPacks []*tensor.Tensor
}

// New validates ws against cfg (every required tensor present with the right shape, nothing
// unexpected) and returns the model. Errors name the offending tensor.
func New(cfg Config, ws map[string]*tensor.Tensor) (*Model, error) {
	return newModel(cfg, ws, Part{}, nil)
}

// newModel is New, as one rank's part of a distributed group's model (pipeline.go, tp.go);
// image, when not nil, is the file mapping (mmap.Map) ws alias, whose pages a rank may release.
func newModel(cfg Config, ws map[string]*tensor.Tensor, part Part, image []byte) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	want := cfg.Shapes()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t, ok := ws[n]
		if !ok || t == nil {
			return nil, fmt.Errorf("model: tensor %s missing%s", n, expertNote(&cfg, n))
		}
		if !slices.Equal(t.Shape, want[n]) {
			return nil, fmt.Errorf("model: %s: shape %v, config wants %v%s", n, t.Shape, want[n], expertNote(&cfg, n))
		}
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if len(want[n]) >= 2 {
			if _, err := t.Type.RowBytes(t.Cols()); err != nil {
				return nil, fmt.Errorf("model: %s: %w", n, err)
			}
		}
	}
	var extra []string
	for n := range ws {
		if _, ok := want[n]; !ok && n != RopeFreqsName {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("model: unexpected tensor %s for config (arch %s, tied=%v, qkv bias=%v, qk norm=%v)%s",
			extra[0], cfg.Arch, cfg.Tied, cfg.QKVBias, cfg.QKNorm, expertNote(&cfg, extra[0]))
	}
	m := &Model{Config: cfg, Weights: ws, tp: part.TP, part: part, image: image}
	var err error
	var factors []float32
	if t, ok := ws[RopeFreqsName]; ok {
		if !slices.Equal(t.Shape, []int{cfg.HeadDim / 2}) {
			return nil, fmt.Errorf("model: %s: shape %v, config wants [%d]", RopeFreqsName, t.Shape, cfg.HeadDim/2)
		}
		if factors, err = t.Float32(); err != nil {
			return nil, fmt.Errorf("model: %s: %w", RopeFreqsName, err)
		}
	} else if cfg.RopeScaling != nil {
		if factors, err = kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	if m.rope, err = kernels.NewRope(cfg.HeadDim, cfg.RopeTheta, cfg.RopeNeoX, factors); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := m.prepareServing(); err != nil {
		return nil, err
	}
	m.populateEmbedding()
	return m, nil
}

// populateEmbedding maps an untied token embedding's pages into the process at load. Decode
// and prefill read a few of its rows at a time, and on a file mapped on 2 MiB folios the first
// touch of each folio costs 0.1-3 ms even when the file is in the page cache (internal/mmap:
// Populate): TinyLlama Q4_0 decode spent 0.45-0.8 ms a step in the embedding op on the tokens
// it had not seen, a prompt as much per new 2 MiB of rows. A tied embedding is the output
// matrix, read whole by every step. A distributed rank's part (m.arena) runs on copies and has
// released the file's pages, which stay released.
func (m *Model) populateEmbedding() {
	if t := m.Weights["token_embd.weight"]; t != nil && !m.Config.Tied && m.arena == nil {
		mmap.Populate(t.Data)
	}
}

// Close releases the file a loader mapped for this model (if any). The model must not be
// used afterwards.
func (m *Model) Close() error {
	for _, t := range m.sws {
		kernels.DropPackF16(t)
		kernels.DropPackQ8(t)
	}
	for _, t := range m.expertPacks {
		kernels.DropPackQ8(t)
	}
	m.expertPacks = nil
	if m.arena != nil {
		_ = m.arena.free()
		m.arena = nil
	}
	if m.closer == nil {
		return nil
	}
	err := m.closer()
	m.closer = nil
	return err
}

func (m *Model) pool() *kernels.Pool {
	if m.Pool != nil {
		return m.Pool
	}
	return kernels.Default
}
