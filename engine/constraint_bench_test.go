// Benchmark of constrained decoding's cost: 64 sequences decode on a random-weight
// Q8_0 model of stories15M's shape with a 32,000-token vocabulary, unconstrained, constrained
// (masks filled beside the forward: the engine's way) and constrained with the masks filled
// after the forward (what the overlap saves). The constraint does a grammar's amount of work
// per mask: a test over every token of the vocabulary, about 30 µs.

//go:build unix

package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/tensor"
)

// randomModel builds a model of cfg with N(0, 0.02) weights, 2-D ones quantized to Q8_0.
func randomModel(tb testing.TB, cfg model.Config, seed uint64) *model.Model {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, seed))
	ws := map[string]*tensor.Tensor{}
	for name, shape := range cfg.Shapes() {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.02)
		}
		t := &tensor.Tensor{Name: name, Type: tensor.F32, Shape: slices.Clone(shape)}
		if len(shape) == 1 {
			for i := range v {
				v[i] = 1 // norms
			}
			t.Data = make([]byte, 4*n)
			for i, x := range v {
				u := math.Float32bits(x)
				t.Data[4*i], t.Data[4*i+1], t.Data[4*i+2], t.Data[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			}
		} else {
			t.Type = tensor.Q8_0
			cols := shape[len(shape)-1]
			rb, err := t.Type.RowBytes(cols)
			if err != nil {
				tb.Fatal(err)
			}
			t.Data = make([]byte, rb*(n/cols))
			for row := range n / cols {
				if err := tensor.QuantizeRow(t.Type, v[row*cols:(row+1)*cols], t.Data[row*rb:(row+1)*rb]); err != nil {
					tb.Fatal(err)
				}
			}
		}
		ws[name] = t
	}
	m, err := model.New(cfg, ws)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// workConstraint allows about one token in 16 (dense: 15 in 16), a different set after every
// token: each mask tests every token of the vocabulary against the state, as a grammar's mask
// computation walks its vocabulary.
type workConstraint struct {
	hash  []uint64 // per token, shared
	state uint64
	dense bool
}

func (c *workConstraint) allowed(t int) bool { return ((c.hash[t]^c.state)&15 == 0) != c.dense }

func (c *workConstraint) FillMask(mask []uint64) {
	h, s := c.hash, c.state
	for w := 0; w*64 < len(h); w++ {
		var word uint64
		for i, x := range h[w*64 : min(w*64+64, len(h))] {
			if (x^s)&15 == 0 {
				word |= 1 << i
			}
		}
		if c.dense {
			word = ^word
			if n := len(h) - w*64; n < 64 {
				word &= 1<<n - 1
			}
		}
		mask[w] = word
	}
}

func (c *workConstraint) Accept(tok int) error {
	if !c.allowed(tok) {
		return fmt.Errorf("token %d not allowed", tok)
	}
	c.state = (c.state ^ uint64(tok)) * 0x9e3779b97f4a7c15
	return nil
}

func (c *workConstraint) Rollback(int) {}
func (c *workConstraint) Done() bool   { return false }

// benchStepper drives a scheduler and a runner by hand, as the step loop does, for 64
// decoding sequences: the benchmark alternates single steps of several steppers.
type benchStepper struct {
	s    *Scheduler
	r    *runner
	smp  map[SeqID]*seqSampler
	name string
}

func newBenchStepper(b *testing.B, m *model.Model, name string, batch int, temp float64, hash []uint64, dense bool) *benchStepper {
	cfg := DefaultConfig()
	cfg.MaxModelLenTokens = m.Config.CtxLen
	cfg.MaxNumSeqs = batch
	cfg.NumBlocks = batch * m.Config.CtxLen / cfg.BlockSizeTokens
	s, err := NewScheduler(cfg)
	if err != nil {
		b.Fatal(err)
	}
	kv, err := m.NewPagedKV(cfg.NumBlocks, cfg.BlockSizeTokens)
	if err != nil {
		b.Fatal(err)
	}
	st := &benchStepper{s: s, r: newRunner(m, kv, false, nil), smp: map[SeqID]*seqSampler{}, name: name}
	st.r.masks.inline = name == "after-forward"
	r := rand.New(rand.NewPCG(3, 3))
	for i := range batch {
		p := make([]int, 8)
		for j := range p {
			p[j] = 3 + r.IntN(m.Config.Vocab-3)
		}
		smp, err := sample.New(sample.Params{Temperature: temp, Seed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		var c Constraint
		if name != "free" {
			c = &workConstraint{hash: hash, state: uint64(i), dense: dense}
		}
		ss := newSeqSampler(smp, c, (m.Config.Vocab+63)/64)
		st.smp[SeqID(i)] = &ss
		if _, err := s.AddRequest(SeqRequest{ID: SeqID(i), Prompt: p, ArrivalTime: int64(i)}); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

// processCPU is the CPU time the process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// step runs one step and returns its result and wall time (execute and Update).
func (st *benchStepper) step(b *testing.B) (stepResult, time.Duration, *StepPlan) {
	t0 := time.Now()
	plan := st.s.Schedule()
	res, err := st.r.execute(plan, func(id SeqID) *seqSampler { return st.smp[id] })
	if err != nil || len(res.rejected) > 0 {
		b.Fatalf("%s: %v %v", st.name, err, res.rejected)
	}
	if _, err := st.s.UpdateTokens(plan, res.sampled); err != nil {
		b.Fatal(err)
	}
	return res, time.Since(t0), plan
}

// BenchmarkConstrainedDecode64 times decode steps of 64 sequences on a random Q8_0 model of
// stories15M's shape with a 32,000-token vocabulary: unconstrained ("free"), constrained with
// the masks filled beside the forward (the engine) and constrained with the masks filled after
// it. Each iteration runs one step of each, in rotating order, so a shared host's noise falls
// on all three alike; it reports each one's median step time, the throughput ratios
// (constrained / free) of median and of fastest wall time and of process CPU time, the median wait for masks after the
// forward, and one mask's cost. Masks allow 1/16 of the vocabulary (as in JSON structure) or,
// "-dense", 15/16 (inside a string), where masked sampling saves nothing.
func BenchmarkConstrainedDecode64(b *testing.B) {
	cfg := model.Config{Arch: "llama", Dim: 288, Layers: 6, Heads: 6, KVHeads: 6, HeadDim: 48, FFN: 768,
		Vocab: 32000, CtxLen: 512, RopeTheta: 10000, NormEps: 1e-5}
	m := randomModel(b, cfg, 1)
	r := rand.New(rand.NewPCG(2, 2))
	hash := make([]uint64, cfg.Vocab)
	for i := range hash {
		hash[i] = r.Uint64()
	}
	c := &workConstraint{hash: hash}
	mask := make([]uint64, (cfg.Vocab+63)/64)
	t0 := time.Now()
	for i := range 200 {
		c.state = uint64(i)
		c.FillMask(mask)
	}
	fill := time.Since(t0) / 200
	const batch = 64
	for _, bc := range []struct {
		temp  float64
		dense bool
	}{{0, false}, {1, false}, {0, true}, {1, true}} {
		name := fmt.Sprintf("temp%g", bc.temp)
		if bc.dense {
			name += "-dense"
		}
		b.Run(name, func(b *testing.B) {
			modes := []string{"free", "constrained", "after-forward"}
			var st []*benchStepper
			for _, mode := range modes {
				st = append(st, newBenchStepper(b, m, mode, batch, bc.temp, hash, bc.dense))
			}
			for _, s := range st { // prefill until every sequence decodes
				for {
					_, _, plan := s.step(b)
					if len(plan.Seqs) == batch && plan.NumBatchedTokens == batch {
						break
					}
				}
			}
			times := make([][]time.Duration, len(st))
			fwd := make([][]time.Duration, len(st))
			smp := make([][]time.Duration, len(st))
			waits := make([][]time.Duration, len(st))
			cpu := make([]time.Duration, len(st))
			i := 0
			for b.Loop() {
				if st[0].s.Sequence(0).NumTokens() >= cfg.CtxLen-1 {
					b.Fatal("context full: run fewer iterations")
				}
				for k := range st {
					j := (i + k) % len(st)
					c0 := processCPU()
					res, d, _ := st[j].step(b)
					cpu[j] += processCPU() - c0
					times[j] = append(times[j], d)
					fwd[j] = append(fwd[j], res.forward)
					smp[j] = append(smp[j], res.sample)
					waits[j] = append(waits[j], res.maskWait)
				}
				i++
			}
			for j, mode := range modes {
				b.ReportMetric(float64(median(times[j]).Microseconds()), mode+"-µs/step")
				b.Logf("%-13s step %v (min %v)  forward %v  mask wait %v  sample %v  CPU %v", mode, median(times[j]),
					slices.Min(times[j]), median(fwd[j]), median(waits[j]), median(smp[j]), cpu[j]/time.Duration(len(times[j])))
			}
			b.ReportMetric(float64(median(times[0]))/float64(median(times[1])), "ratio")
			b.ReportMetric(float64(median(times[0]))/float64(median(times[2])), "ratio-after-fwd")
			b.ReportMetric(float64(slices.Min(times[0]))/float64(slices.Min(times[1])), "ratio-min")
			b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-ratio")
			b.ReportMetric(float64(median(waits[1]).Microseconds()), "maskwait-µs")
			b.ReportMetric(float64(fill.Microseconds()), "fill-µs/mask")
		})
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
