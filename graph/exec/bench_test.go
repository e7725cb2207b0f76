// Benchmarks: the compiled graph against model.ForwardBatch side by side at the stories110M
// shape (random weights), decode (one row after 128 cached positions) and prefill (64 rows).
//
//	nice go test ./graph/exec -run X -bench Stories110M -count 5
package exec_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

var benchModels = map[tensor.DType]*model.Model{}

func stories110M(b *testing.B, dt tensor.DType) *model.Model {
	if m := benchModels[dt]; m != nil {
		return m
	}
	o := synth.Presets["stories110m"]
	cfg, err := o.Config()
	if err != nil {
		b.Fatal(err)
	}
	ws := map[string]*tensor.Tensor{}
	for name, shape := range cfg.Shapes() {
		w := synth.Generate(name, shape, 1)
		if len(shape) == 2 {
			if w, err = tensor.Convert(w, dt); err != nil {
				b.Fatal(err)
			}
		}
		ws[name] = w
	}
	m, err := model.New(cfg, ws)
	if err != nil {
		b.Fatal(err)
	}
	benchModels[dt] = m
	return m
}

// stepFunc prepares one sequence's step of rows tokens after start cached positions (on its
// own KV pool) and returns a function running it through the graph or ForwardBatch.
func stepFunc(b *testing.B, m *model.Model, useGraph bool, start, rows int) func() error {
	const bs = 16
	kv, err := m.NewPagedKV((start+rows+bs-1)/bs, bs)
	if err != nil {
		b.Fatal(err)
	}
	table := make([]int32, kv.NumBlocks)
	for i := range table {
		table[i] = int32(i)
	}
	var batch model.Batch
	if start > 0 {
		if _, err := m.ForwardBatch(&batch, kv, []model.BatchSeq{{Tokens: make([]int, start), BlockTable: table}}); err != nil {
			b.Fatal(err)
		}
	}
	toks := make([]int, rows)
	for i := range toks {
		toks[i] = (i*7919 + 13) % m.Config.Vocab
	}
	seq := []model.BatchSeq{{Tokens: toks, StartPos: start, BlockTable: table, NeedsLogits: true}}
	var run func() error
	if useGraph {
		p := compile(b, m, false, graph.ServingPipeline())
		st := &exec.Step{Tokens: toks, LogitRows: []int{rows - 1}, KV: exec.KV{K: kv.K, V: kv.V, BlockSize: bs}}
		for i := range toks {
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: start + i, Table: table})
		}
		run = func() error { _, err := p.Run(st); return err }
	} else {
		run = func() error { _, err := m.ForwardBatch(&batch, kv, seq); return err }
	}
	if err := run(); err != nil {
		b.Fatal(err)
	}
	return run
}

// benchCase runs one sequence's step of rows tokens after start cached positions.
func benchCase(b *testing.B, m *model.Model, useGraph bool, start, rows int) {
	run := stepFunc(b, m, useGraph, start, rows)
	b.ResetTimer()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

func BenchmarkStories110M(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.F16} {
		for _, c := range []struct {
			name        string
			start, rows int
		}{{"decode", 128, 1}, {"prefill64", 0, 64}} {
			for _, path := range []string{"forwardbatch", "graph"} {
				b.Run(fmt.Sprintf("%s/%s/%s", dt, c.name, path), func(b *testing.B) {
					benchCase(b, stories110M(b, dt), path == "graph", c.start, c.rows)
				})
			}
		}
	}
}

// BenchmarkStories110MRatio alternates the two paths call by call (so a noisy machine slows
// both alike) and reports the graph's speed relative to ForwardBatch (median call times;
// above 1 is faster).
func BenchmarkStories110MRatio(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.F16} {
		for _, c := range []struct {
			name        string
			start, rows int
		}{{"decode", 128, 1}, {"prefill64", 0, 64}} {
			b.Run(fmt.Sprintf("%s/%s", dt, c.name), func(b *testing.B) {
				m := stories110M(b, dt)
				alternate(b, stepFunc(b, m, false, c.start, c.rows), stepFunc(b, m, true, c.start, c.rows), 1e6, "ms")
			})
		}
	}
}

// BenchmarkSmallRatio is BenchmarkStories110MRatio on a small model, where the executor's own
// overhead (dispatch, buffer views) would show if it mattered.
func BenchmarkSmallRatio(b *testing.B) {
	m := randModel(b, archConfigs()["llama"], tensor.Q8_0, 1)
	for _, c := range []struct {
		name        string
		start, rows int
	}{{"decode", 40, 1}, {"prefill16", 0, 16}} {
		b.Run(c.name, func(b *testing.B) {
			alternate(b, stepFunc(b, m, false, c.start, c.rows), stepFunc(b, m, true, c.start, c.rows), 1e3, "µs")
		})
	}
}

// alternate runs the two paths call by call, in alternating order, and reports the ratio of
// their median times (forwardBatch's over the graph's: above 1, the graph is faster) and each
// median in unit (scale ns per unit).
func alternate(b *testing.B, forwardBatch, graph func() error, scale float64, unit string) {
	runs := [2]func() error{forwardBatch, graph}
	var ts [2][]time.Duration
	i := 0
	for b.Loop() {
		for k := range 2 {
			k = (k + i) % 2
			t0 := time.Now()
			if err := runs[k](); err != nil {
				b.Fatal(err)
			}
			ts[k] = append(ts[k], time.Since(t0))
		}
		i++
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2])
	}
	b.ReportMetric(med(ts[0])/med(ts[1]), "graph/forwardbatch-speed")
	b.ReportMetric(med(ts[1])/scale, "graph-"+unit)
	b.ReportMetric(med(ts[0])/scale, "forwardbatch-"+unit)
}

// BenchmarkSmallDecode is one path's decode step on the small model (for profiles).
func BenchmarkSmallDecode(b *testing.B) {
	m := randModel(b, archConfigs()["llama"], tensor.Q8_0, 1)
	for _, path := range []string{"forwardbatch", "graph"} {
		b.Run(path, func(b *testing.B) { benchCase(b, m, path == "graph", 40, 1) })
	}
}
