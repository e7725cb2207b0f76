// This file connects the model to the graph executor: at New the network is built as a graph
// (graph.go), the serving passes fuse it, and the weights it names are gathered (vectors as
// F32, the Llama 3 RoPE divisors added when the config computes them, F16 matrices registered
// for the prefill GEMM's packs: kernels.PrepackF16, Q8_0 and Q4_0 ones: kernels.PrepackQ8); each Batch compiles
// its own exec.Program from that once, as the executor's run state is not shared.
package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/internal/sysmem"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// prepareServing builds m's serving graph and the weights it binds, and compiles it once to
// check every weight against it.
func (m *Model) prepareServing() error {
	g, err := m.Graph()
	if err != nil {
		return err
	}
	in, out := m.stageCut()
	if in != "" || out != "" {
		if g, err = graph.Cut(g, in, out); err != nil {
			return fmt.Errorf("model: pipeline stage %d of %d: %w", m.part.Stage, m.part.Stages, err)
		}
	}
	if m.tp != nil {
		if g, err = graph.ShardTPServing(g, m.tp.Rank(), m.tp.Size(), m.part.tpOptions()); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	if g, _, err = graph.RunPasses(g, graph.ServingPipeline()...); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	ws := make(map[string]*tensor.Tensor, len(m.Weights)+1)
	if m.image != nil && (m.tp != nil || m.part.Stages > 1) { // a rank's part: copied (tp_arena.go)
		names := make([]string, 0, len(g.Weights))
		for _, v := range g.Weights {
			names = append(names, v.Name)
		}
		if m.arena, err = newWeightArena(arenaSize(m.Weights, names, m.TPSize(), m.part.tpOptions())); err != nil {
			return err
		}
	}
	for _, v := range g.Weights {
		t := m.Weights[v.Name]
		if m.tp != nil {
			if t, err = tpShard(t, m.tp.Rank(), m.tp.Size(), m.part.tpOptions(), m.arena, false); err != nil {
				return err
			}
		} else {
			t = m.arena.copyOf(t)
		}
		if m.arena != nil && t != nil && m.Weights[v.Name] != nil {
			mmap.Release(m.Weights[v.Name].Data) // its pages (the whole matrix for a column block)
		}
		if t != nil && len(t.Shape) == 1 && t.Type != tensor.F32 {
			f, err := t.Float32()
			if err != nil {
				return fmt.Errorf("model: %s: %w", v.Name, err)
			}
			t = f32Tensor(v.Name, f)
		}
		ws[v.Name] = t
	}
	if ws[RopeFreqsName] == nil && m.rope.Factors != nil {
		ws[RopeFreqsName] = f32Tensor(RopeFreqsName, m.rope.Factors)
	}
	m.sg, m.sws = g, ws
	if f16PacksFit(ws, sysmem.Available()) {
		for _, t := range ws {
			kernels.PrepackF16(t) // F16 matrices: repacked for prefill GEMMs on first use (AVX2, AVX-512)
		}
	}
	if q8PacksFit(ws, sysmem.Available()) {
		for _, t := range ws {
			kernels.PrepackQ8(t) // Q8_0 / Q4_0 matrices: packed for the prefill tiles on first use (AVX2; VNNI: Q4_0; AMX: both)
		}
		m.expertPacks = prepackExperts(ws) // and each expert of a mixture of experts
	}
	if _, err := exec.Compile(g, ws, m.execOptions()); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

func f32Tensor(name string, f []float32) *tensor.Tensor {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: []int{len(f)}, Data: b}
}

// program returns b's compiled graph for m, compiling it on b's first use with m, set to m's
// pool and b's invariance.
func (m *Model) program(b *Batch) (*exec.Program, error) {
	if b.prog == nil || b.progOf != m {
		p, err := exec.Compile(m.sg, m.sws, m.execOptions())
		if err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		b.prog, b.progOf = p, m
	}
	b.prog.SetPool(m.pool())
	b.prog.SetInvariant(b.Invariant)
	b.prog.SetRecorder(b.Recorder)
	b.prog.SetMatMulObserver(b.Observer)
	return b.prog, nil
}

// f16PacksFit reports whether the packed copies of ws's F16 matrices (as many bytes again as
// the matrices) fit in a quarter of avail, the machine's available memory (true when unknown,
// 0): a larger model keeps its prefill GEMMs on the stored rows rather than double its memory.
func f16PacksFit(ws map[string]*tensor.Tensor, avail int64) bool {
	var n int64
	for _, t := range ws {
		if t.Type == tensor.F16 && len(t.Shape) == 2 {
			n += int64(len(t.Data))
		}
	}
	return n == 0 || avail == 0 || n <= avail/4
}

// execOptions are the executor's options for m's serving graph.
func (m *Model) execOptions() exec.Options {
	in, _ := m.stageCut()
	return exec.Options{TP: m.tp, Hidden: in}
}
