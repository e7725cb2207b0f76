// Test helpers: random models of every architecture and weight type, compiled for the
// executor, and a driver that runs the same ragged batches through model.ForwardBatch and
// Program.Run on two paged KV pools of the same layout.
package exec_test

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// archConfigs are small models of each architecture; widths are multiples of 256 so every
// weight type (Q4_K included) applies.
func archConfigs() map[string]model.Config {
	base := model.Config{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, Vocab: 300,
		CtxLen: 128, RopeTheta: 10000, NormEps: 1e-5}
	ll := base
	q2 := base
	q2.Arch, q2.QKVBias, q2.Tied, q2.RopeNeoX, q2.RopeTheta, q2.NormEps = "qwen2", true, true, true, 1e6, 1e-6
	q3 := base
	q3.Arch, q3.QKNorm, q3.RopeNeoX, q3.Heads, q3.KVHeads = "qwen3", true, true, 8, 4 // head dim 64 != 256/8
	l3 := base
	l3.KVHeads = 1
	l3.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}
	tied := base
	tied.Tied, tied.KVHeads = true, 4
	return map[string]model.Config{"llama": ll, "qwen2": q2, "qwen3": q3, "llama3": l3, "tied": tied}
}

// randModel makes cfg with random weights, matrices in dt.
func randModel(t testing.TB, cfg model.Config, dt tensor.DType, seed uint64) *model.Model {
	r := rand.New(rand.NewPCG(seed, 7))
	ws := map[string]*tensor.Tensor{}
	for name, shape := range cfg.Shapes() {
		n := 1
		for _, d := range shape {
			n *= d
		}
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			v := r.NormFloat64() * 0.1
			if len(shape) == 1 && strings.HasSuffix(name, "norm.weight") {
				v = 1 + 0.1*r.NormFloat64()
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
		w := &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
		if len(shape) == 2 && dt != tensor.F32 {
			var err error
			if w, err = tensor.Convert(w, dt); err != nil {
				t.Fatal(err)
			}
		}
		ws[name] = w
	}
	m, err := model.New(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// compile builds m's graph, runs the serving passes and compiles it with m's weights (plus
// the Llama 3 RoPE divisors when the config computes them).
func compile(t testing.TB, m *model.Model, inv bool, passes []graph.Pass) *exec.Program {
	g, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if g, _, err = graph.RunPasses(g, passes...); err != nil {
		t.Fatal(err)
	}
	ws := maps.Clone(m.Weights)
	if _, ok := ws[model.RopeFreqsName]; !ok && m.Config.RopeScaling != nil {
		f, err := kernels.Llama3Factors(m.Config.HeadDim, m.Config.RopeTheta, *m.Config.RopeScaling)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4*len(f))
		for i, v := range f {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		ws[model.RopeFreqsName] = &tensor.Tensor{Name: model.RopeFreqsName, Type: tensor.F32, Shape: []int{len(f)}, Data: b}
	}
	p, err := exec.Compile(g, ws, exec.Options{Pool: m.Pool, Invariant: inv})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pair drives the same sequences through ForwardBatch and Program.Run.
type pair struct {
	m      *model.Model
	p      *exec.Program
	b      model.Batch
	kvM    *model.PagedKV
	kvP    *model.PagedKV
	tables [][]int32
	free   []int32
	toks   [][]int
	done   []int
	st     exec.Step
}

func newPair(t testing.TB, m *model.Model, p *exec.Program, prompts [][]int, inv bool, seed uint64) *pair {
	const blocks, bs = 96, 4
	kvM, err := m.NewPagedKV(blocks, bs)
	if err != nil {
		t.Fatal(err)
	}
	kvP, _ := m.NewPagedKV(blocks, bs)
	s := &pair{m: m, p: p, kvM: kvM, kvP: kvP, tables: make([][]int32, len(prompts)), toks: prompts, done: make([]int, len(prompts))}
	s.b.Invariant = inv
	for _, b := range rand.New(rand.NewPCG(seed, 1)).Perm(blocks) {
		s.free = append(s.free, int32(b))
	}
	return s
}

// step runs n[i] tokens of each sequence i (0: none) through both paths; sequences reaching
// their end get logits and their argmax appended. It returns both logits.
func (s *pair) step(t testing.TB, n []int) (want, got []float32) {
	t.Helper()
	var seqs []model.BatchSeq
	var ids []int
	st := &s.st
	st.Tokens, st.Rows, st.LogitRows = st.Tokens[:0], st.Rows[:0], st.LogitRows[:0]
	for i, c := range n {
		if c == 0 {
			continue
		}
		end := s.done[i] + c
		for len(s.tables[i])*s.kvM.BlockSize < end {
			s.tables[i] = append(s.tables[i], s.free[0])
			s.free = s.free[1:]
		}
		sq := model.BatchSeq{Tokens: s.toks[i][s.done[i]:end], StartPos: s.done[i], BlockTable: s.tables[i],
			NeedsLogits: end == len(s.toks[i])}
		seqs = append(seqs, sq)
		ids = append(ids, i)
		for j, tk := range sq.Tokens {
			st.Tokens = append(st.Tokens, tk)
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: sq.StartPos + j, Table: sq.BlockTable})
		}
		if sq.NeedsLogits {
			st.LogitRows = append(st.LogitRows, len(st.Tokens)-1)
		}
	}
	want, err := s.m.ForwardBatch(&s.b, s.kvM, seqs)
	if err != nil {
		t.Fatal(err)
	}
	st.KV = exec.KV{K: s.kvP.K, V: s.kvP.V, BlockSize: s.kvP.BlockSize}
	if got, err = s.p.Run(st); err != nil {
		t.Fatal(err)
	}
	V := s.m.Config.Vocab
	j := 0
	for k, sq := range seqs {
		i := ids[k]
		s.done[i] += len(sq.Tokens)
		if sq.NeedsLogits {
			s.toks[i] = append(s.toks[i], argmax(want[j*V:(j+1)*V]))
			j++
		}
	}
	return want, got
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func randPrompts(vocab int, lens []int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 2))
	var out [][]int
	for _, l := range lens {
		p := make([]int, l)
		for i := range p {
			p[i] = r.IntN(vocab)
		}
		out = append(out, p)
	}
	return out
}

// sameBits fails unless a and b are equal bit for bit.
func sameBits(t testing.TB, what string, want, got []float32) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: value %d is %v, ForwardBatch %v", what, i, got[i], want[i])
		}
	}
}
