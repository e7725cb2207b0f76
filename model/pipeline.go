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
	// Stages equal runs, stage s holding [s·L/Stages, (s+1)·L/Stages), or as Partition says.
	Stage, Stages int
	// Partition, when set, are the layers of each stage (Stages numbers adding up to the
	// model's layers; vLLM's VLLM_PP_LAYER_PARTITION): the last stage, which also runs the
	// output matmul, can take fewer.
	Partition []int
	// ExpertParallel splits a mixture of experts over TP by expert (graph.TPOptions).
	ExpertParallel bool
}

// tpOptions are the graph's options for p's tensor-parallel shard.
func (p Part) tpOptions() graph.TPOptions { return graph.TPOptions{ExpertParallel: p.ExpertParallel} }

// CheckPipeline reports why cfg's layers cannot be cut into stages stages: equal ones, or
// those of partition when it is not nil (one count of at least 1 per stage, adding up to the
// layers).
func CheckPipeline(cfg *Config, stages int, partition []int) error {
	if stages < 1 {
		return fmt.Errorf("pipeline-parallel size %d < 1", stages)
	}
	if partition != nil {
		sum := 0
		for _, n := range partition {
			if n < 1 {
				return fmt.Errorf("pipeline layer partition %v: every stage needs a layer", partition)
			}
			sum += n
		}
		if len(partition) != stages || sum != cfg.Layers {
			return fmt.Errorf("pipeline layer partition %v: want %d stages adding up to the layers (%d)", partition, stages, cfg.Layers)
		}
		return nil
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
		if err := CheckPipeline(&cfg, p.Stages, p.Partition); err != nil {
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
	if p := m.part.Partition; p != nil {
		for _, n := range p[:m.part.Stage] {
			lo += n
		}
		return lo, lo + p[m.part.Stage]
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

// StagePipe connects rank 0's first pipeline stage to the rest of the pipeline (package
// engine/dist). Send and Recv run on different goroutines: Recv gets the logits of the
// (micro-)batches in the order they were sent, while later ones are still being computed.
type StagePipe interface {
	// Send hands a (micro-)batch's stage output, the residual stream of its rows, to the next
	// stage.
	Send(out []float32, seqs []BatchSeq) error
	// Recv fills dst, the (micro-)batch's logits ([rows asked for, Vocab]), from the last stage.
	Recv(dst []float32, seqs []BatchSeq) error
}

// forwardStage runs the batch prepared in b.step (n rows) through a stage before the last:
// its output is the residual stream of all n rows.
func (m *Model) forwardStage(b *Batch, prog *exec.Program, n int) ([]float32, error) {
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
	return out, nil
}

// forwardPipe runs seqs (checked; nl logits rows) through rank 0's first stage and the
// pipeline behind m.Pipe: cut into up to MicroBatches micro-batches of whole sequences
// (microBatches), each announced (OnForward: every rank runs it as a step of its own), run
// through the stage and sent down the pipe as soon as it is done, while a second goroutine
// receives the micro-batches' logits in order. So this stage computes micro-batch i+1 while
// the next computes i: with P stages and M micro-batches a batch takes about (M+P-1)/M
// stage-times instead of P (GPipe's schedule, forward only). The logits are in seqs order.
func (m *Model) forwardPipe(dst []float32, fresh bool, b *Batch, kv *PagedKV, prog *exec.Program, seqs []BatchSeq, nl int) ([]float32, error) {
	V := m.Config.Vocab
	var out []float32
	switch {
	case cap(dst) >= nl*V:
		out = dst[:nl*V]
	case fresh:
		out = make([]float32, nl*V)
	default:
		if cap(b.piped) < nl*V {
			b.piped = make([]float32, nl*V)
		}
		out = b.piped[:nl*V]
	}
	b.micro = microBatches(b.micro[:0], seqs, m.MicroBatches)
	type sentBatch struct {
		seqs []BatchSeq
		off  int
	}
	sent := make(chan sentBatch, len(b.micro))
	recvd := make(chan error, 1)
	go func() {
		var err error
		for s := range sent { // after a failure, drain without receiving
			if err == nil {
				k := logitRows(s.seqs) * V
				err = m.Pipe.Recv(out[s.off:s.off+k], s.seqs)
			}
		}
		recvd <- err
	}()
	var err error
	off := 0
	for _, g := range b.micro {
		if err = m.beginStep(b, kv, g); err != nil {
			break
		}
		n := 0
		for _, s := range g {
			n += len(s.Tokens)
		}
		var h []float32
		if h, err = m.forwardStage(b, prog, n); err != nil {
			break
		}
		if err = m.Pipe.Send(h, g); err != nil {
			err = fmt.Errorf("model: %w", err)
			break
		}
		sent <- sentBatch{g, off}
		off += logitRows(g) * V
	}
	close(sent)
	if rerr := <-recvd; err == nil && rerr != nil {
		err = fmt.Errorf("model: %w", rerr)
	}
	clear(b.micro)
	if err != nil {
		return nil, err
	}
	if nl == 0 {
		return nil, nil
	}
	return out, nil
}

// logitRows is the number of logits rows seqs ask for.
func logitRows(seqs []BatchSeq) int {
	n := 0
	for _, s := range seqs {
		switch {
		case !s.NeedsLogits:
		case s.allLogits:
			n += len(s.Tokens)
		default:
			n += max(s.NumLogits, 1)
		}
	}
	return n
}

// microBatches appends to dst seqs cut into at most m runs of whole sequences with about
// equal tokens (seqs itself when m <= 1 or one sequence).
func microBatches(dst [][]BatchSeq, seqs []BatchSeq, m int) [][]BatchSeq {
	m = min(m, len(seqs))
	if m <= 1 {
		return append(dst, seqs)
	}
	total := 0
	for _, s := range seqs {
		total += len(s.Tokens)
	}
	start, acc, made := 0, 0, 0
	for i, s := range seqs {
		acc += len(s.Tokens)
		left := len(seqs) - i - 1 // sequences after this one
		cuts := m - made - 1      // cuts still to make
		// Cut after this sequence when the run reached its share of the tokens, or when every
		// sequence left must start a run of its own.
		if cuts > 0 && left > 0 && (acc*m >= total*(made+1) || left == cuts) {
			dst = append(dst, seqs[start:i+1])
			start, made = i+1, made+1
		}
	}
	return append(dst, seqs[start:])
}
