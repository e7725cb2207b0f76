package loader_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkAWQDecode compares decode speed of an AWQ checkpoint with a Q4_K_M GGUF of the
// same shape in one process: rounds of 16 decode tokens on each model, alternated (the order
// reversed every other round), so all see the same host load. The AWQ checkpoint runs three
// ways: "AWQ" as loaded (Q4_0Z decode with the zeros folded into the VNNI kernel where the
// CPU has it), "AWQ-pass" with the zero codes dropped (the Q4_0 kernel, then the correction
// pass over the float32 corrections: the path before the fused kernel, and the one every
// non-VNNI CPU takes) and "AWQ-q6k" with the fp16 lm_head quantized to Q6_K at load (the
// --output-tensor-type q6_k opt-in, which changes the logits). It reports each one's median
// tokens/s and the median of its per-round ratios to Q4_K_M. The models come from
// LLMCLOUD_AWQ (an AWQ directory, e.g. written by `llmcloud quantize tinyllama-f16.gguf DIR
// --format awq`) and LLMCLOUD_Q4KM (default /work/perfmodels/tinyllama-q4_k_m.gguf); skipped
// without them:
//
//	LLMCLOUD_AWQ=/work/scratch/awq/tinyllama-awq LLMCLOUD_Q4KM=/work/scratch/awq/tinyllama-q4_k_m.gguf \
//	    go test ./loader -run X -bench AWQDecode -benchtime 8x
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
	names := []string{"Q4_K_M", "AWQ", "AWQ-pass", "AWQ-q6k"}
	var bs []*loader.Bundle
	for i, p := range []string{q4, awq, awq, awq} {
		bb, err := loader.Open(p, loader.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer bb.Close()
		switch names[i] {
		case "AWQ-pass":
			for _, t := range bb.Model.Weights {
				if t.Zero != nil {
					z := *t.Zero
					z.Codes = nil
					t.Zero = &z
				}
			}
		case "AWQ-q6k":
			if _, _, err := bb.Model.QuantizeOutput(tensor.Q6_K); err != nil {
				b.Fatal(err)
			}
		}
		bs = append(bs, bb)
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
	for i := range bs {
		run(i)
	}
	tps := make([][]float64, len(bs))
	ratio := make([][]float64, len(bs))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		round := make([]float64, len(bs))
		for j := range bs {
			i := j
			if n%2 == 1 {
				i = len(bs) - 1 - j
			}
			round[i] = run(i)
		}
		for i := range bs {
			tps[i] = append(tps[i], round[i])
			ratio[i] = append(ratio[i], round[i]/round[0])
		}
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for i, name := range names {
		b.ReportMetric(med(tps[i]), name+"-t/s")
		if i > 0 {
			b.ReportMetric(med(ratio[i]), name+"/Q4_K_M")
		}
	}
}
