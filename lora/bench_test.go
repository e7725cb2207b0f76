package lora

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

// BenchmarkDecodeStep times one decode step of 64 sequences (each 64 tokens in) on the default
// model (or $LORA_BENCH_MODEL), alternately the base alone and spread over 8 adapters of rank 8 and 16 on every
// linear layer; it reports the medians and their ratio (base time / adapters' time).
func BenchmarkDecodeStep(b *testing.B) {
	p, err := defaultmodel.Path()
	if env := os.Getenv("LORA_BENCH_MODEL"); env != "" { // e.g. /work/perfmodels/tinyllama-q8_0.gguf
		p, err = env, nil
	}
	if err != nil {
		b.Skip(err)
	}
	bu, err := loader.Open(p, loader.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bu.Close()
	m := bu.Model
	reg := &Registry{}
	var ids []uint32
	for i := range 8 {
		r := 8 + 8*(i%2)
		a, err := Random(fmt.Sprint(i), &m.Config, allMods, r, 2*float64(r), 0.02, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		id, _ := reg.Add(a.Name, "", a)
		ids = append(ids, id)
	}
	const seqs, ctx = 64, 64
	kv, err := m.NewPagedKV(seqs*5, 16)
	if err != nil {
		b.Fatal(err)
	}
	mk := func(lo bool) []model.BatchSeq {
		bs := make([]model.BatchSeq, seqs)
		for i := range bs {
			bs[i] = model.BatchSeq{Tokens: []int{i + 1}, StartPos: ctx, NeedsLogits: true,
				BlockTable: []int32{int32(5 * i), int32(5*i + 1), int32(5*i + 2), int32(5*i + 3), int32(5*i + 4)}}
			if lo {
				bs[i].Adapter = ids[i%8]
			}
		}
		return bs
	}
	base, with := mk(false), mk(true)
	batch := &model.Batch{LoRA: reg}
	step := func(bs []model.BatchSeq) time.Duration {
		t0 := time.Now()
		if _, err := m.ForwardBatch(batch, kv, bs); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	// Alternate base and adapter steps (the machine is shared: compare within one run) and
	// report the median of each.
	var tb, tl []time.Duration
	for b.Loop() {
		tb = append(tb, step(base))
		tl = append(tl, step(with))
	}
	slices.Sort(tb)
	slices.Sort(tl)
	b.ReportMetric(float64(tb[len(tb)/2].Microseconds()), "base-us")
	b.ReportMetric(float64(tl[len(tl)/2].Microseconds()), "lora-us")
	b.ReportMetric(float64(tb[len(tb)/2])/float64(tl[len(tl)/2]), "ratio")
}
