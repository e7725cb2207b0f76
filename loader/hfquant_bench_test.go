package loader_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/loader"
)

// BenchmarkAWQDecode compares decode speed of an AWQ checkpoint with a Q4_K_M GGUF of the
// same shape in one process: rounds of 16 decode tokens on each model, alternated, so both
// see the same host load. It reports each model's median tokens/s and the median of the
// per-round ratios AWQ/Q4_K_M. The models come from LLMCLOUD_AWQ (an AWQ directory, e.g.
// written by `llmcloud quantize-hf /work/perfmodels/tinyllama-f16.gguf DIR --format awq`)
// and LLMCLOUD_Q4KM (default /work/perfmodels/tinyllama-q4_k_m.gguf); skipped without them:
//
//	LLMCLOUD_AWQ=/work/q21b/tinyllama-awq go test ./loader -run X -bench AWQDecode -benchtime 8x
func BenchmarkAWQDecode(b *testing.B) {
	awq, q4 := os.Getenv("LLMCLOUD_AWQ"), os.Getenv("LLMCLOUD_Q4KM")
	if q4 == "" {
		q4 = "/work/perfmodels/tinyllama-q4_k_m.gguf"
	}
	if _, err := os.Stat(awq); awq == "" || err != nil {
		b.Skip("LLMCLOUD_AWQ: no AWQ directory")
	}
	if _, err := os.Stat(q4); err != nil {
		b.Skip("no Q4_K_M model")
	}
	var bs [2]*loader.Bundle
	for i, p := range []string{q4, awq} {
		bb, err := loader.Open(p, loader.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer bb.Close()
		bs[i] = bb
	}
	const burst = 16
	run := func(i int) float64 {
		m := bs[i].Model
		c := m.NewCache(burst + 1)
		tok := 1
		t0 := time.Now()
		for j := 0; j < burst; j++ {
			l, err := m.Decode(c, tok)
			if err != nil {
				b.Fatal(err)
			}
			tok = int(l[0]*0) + 2 + j
		}
		return burst / time.Since(t0).Seconds()
	}
	run(0)
	run(1)
	var tps [2][]float64
	var ratio []float64
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		a, q := run(1), run(0)
		if n%2 == 1 {
			q, a = run(0), run(1)
		}
		tps[0], tps[1] = append(tps[0], q), append(tps[1], a)
		ratio = append(ratio, a/q)
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(tps[0]), "Q4_K_M-t/s")
	b.ReportMetric(med(tps[1]), "AWQ-t/s")
	b.ReportMetric(med(ratio), "AWQ/Q4_K_M")
}
