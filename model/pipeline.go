// This file is the part of the model one rank of a serving group runs (Part): its tensor-
// parallel shard (tp.go) of one pipeline stage, the blocks [FirstLayer, EndLayer) cut from the
// serving graph (graph.Cut). A stage after the first reads the residual stream entering its
// first block (Batch.StageInput); a stage before the last outputs the residual stream leaving
// its last block instead of logits, and holds KV rows for its own layers only.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// Part is the piece of a model one rank serves. The zero value is the whole model.
type Part struct {
	TP exec.Collective // the tensor-parallel group (nil: every head)
	// Stage of Stages pipeline stages (Stages 0 or 1: no pipeline); the layers are cut into
	// Stages equal runs, stage s holding [s·L/Stages, (s+1)·L/Stages).
	Stage, Stages int
	// ExpertParallel splits a mixture of experts over TP by expert (graph.TPOptions).
	ExpertParallel bool
}

// tpOptions are the graph's options for p's tensor-parallel shard.
func (p Part) tpOptions() graph.TPOptions { return graph.TPOptions{ExpertParallel: p.ExpertParallel} }

// CheckPipeline reports why cfg's layers cannot be cut into stages equal stages.
func CheckPipeline(cfg *Config, stages int) error {
	if stages < 1 {
		return fmt.Errorf("pipeline-parallel size %d < 1", stages)
	}
	if cfg.Layers%stages != 0 {
		return fmt.Errorf("pipeline-parallel size %d does not divide the layers (%d)", stages, cfg.Layers)
	}
	return nil
}

// LoadGGUFPart is LoadGGUF for one rank's part (LoadGGUFTP for a pipeline stage too): the
// tensors alias f's mapping and only the part's blocks are read.
func LoadGGUFPart(f *gguf.File, p Part) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	if p.TP != nil {
		if err := CheckTP(&cfg, p.TP.Size(), p.tpOptions()); err != nil {
			return nil, fmt.Errorf("%s: model: %w", f.Path, err)
		}
	}
	if p.Stages > 1 {
		if err := CheckPipeline(&cfg, p.Stages); err != nil {
			return nil, fmt.Errorf("%s: model: %w", f.Path, err)
		}
		if p.Stage < 0 || p.Stage >= p.Stages {
			return nil, fmt.Errorf("%s: model: pipeline stage %d of %d", f.Path, p.Stage, p.Stages)
		}
	}
	ws := make(map[string]*tensor.Tensor, len(f.Tensors))
	for i := range f.Tensors {
		ws[f.Tensors[i].Name] = &f.Tensors[i]
	}
	var image []byte
	if f.Mapped() {
		image = f.Image()
	}
	m, err := newModel(cfg, ws, p, image)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if m.arena != nil { // the part's weights are copies: none of the file needs to stay resident
		mmap.Release(image)
	}
	return m, nil
}

// Layers are the blocks [lo, hi) m runs (all of them without a pipeline).
func (m *Model) Layers() (lo, hi int) {
	L, s := m.Config.Layers, m.part.Stages
	if s <= 1 {
		return 0, L
	}
	return m.part.Stage * L / s, (m.part.Stage + 1) * L / s
}

// LastStage reports whether m ends with the logits (no pipeline, or its last stage).
func (m *Model) LastStage() bool {
	_, hi := m.Layers()
	return hi == m.Config.Layers
}

// stageCut are the values graph.Cut cuts m's stage at ("": none).
func (m *Model) stageCut() (in, out string) {
	lo, hi := m.Layers()
	if lo > 0 {
		in = BlockInput(lo)
	}
	if hi < m.Config.Layers {
		out = BlockInput(hi)
	}
	return in, out
}

// forwardStage runs the batch prepared in b.step through a stage before the last: its output
// is the residual stream of all n rows, handed to OnStageOutput when set.
func (m *Model) forwardStage(b *Batch, prog *exec.Program, seqs []BatchSeq, n int) ([]float32, error) {
	st := &b.step
	if cap(b.logits) < n*m.Config.Dim {
		b.logits = make([]float32, n*m.Config.Dim)
	}
	st.Out = b.logits[:n*m.Config.Dim]
	out, err := prog.Run(st)
	clear(st.Rows)
	for g := range st.GroupRows {
		clear(st.GroupRows[g])
	}
	st.KV, st.Out, st.LoRA, st.Hidden = exec.KV{}, nil, nil, nil
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if m.OnStageOutput != nil {
		return m.OnStageOutput(out, seqs)
	}
	return out, nil
}
