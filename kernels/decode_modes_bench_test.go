package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkQ8DecodeModes compares decode configurations of the Q8_0 one-token matmul against
// a plain read of the same memory at the same moments, in both of the bandwidth modes the Zen 5
// VM switches between (about 50-55 and 75-90 GB/s for two threads): 512 MiB of huge-page
// 5632 x 2048 Q8_0 matrices, and each turn a read (two goroutines, the f32 Dot of each half
// with itself) followed by one pass of every configuration over all the matrices. Each
// configuration's GB/s over the read's of its turn is reported as the median over the turns
// whose read was above 65 GB/s ("hi") and over the others ("lo"):
//
//	go test ./kernels -run X -bench Q8DecodeModes -benchtime 60x
func BenchmarkQ8DecodeModes(b *testing.B) {
	if !quantVNNI {
		b.Skip("no VNNI")
	}
	w0 := randQuantFast(b, tensor.Q8_0, 5632, 2048)
	ws, release := hugeCopies(b, w0, 1, 512<<20)
	defer release()
	region := unsafe.Slice((*float32)(unsafe.Pointer(&ws[0].Data[0])), len(ws)*len(w0.Data)/4)
	x := qRandVec(rand.New(rand.NewPCG(2, 3)), 2048, 1)
	out := make([]float32, 5632)
	p := NewPool(2)
	read := func() float64 {
		var wg sync.WaitGroup
		t0 := time.Now()
		for t := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := region[t*len(region)/2 : (t+1)*len(region)/2]
				Dot(h, h)
			}()
		}
		wg.Wait()
		return float64(len(region)*4) / time.Since(t0).Seconds() / 1e9
	}
	type config struct {
		name string
		set  func()
	}
	defer func(s8 bool) { useStreams8[0] = s8 }(useStreams8[0])
	configs := []config{ // a kernel variant to compare joins here (the generator's variants: asmgen/quant)
		{"s4", func() { useStreams8[0] = false }},
		{"s8", func() { useStreams8[0] = true }},
	}
	pass := func() float64 {
		t0 := time.Now()
		for _, w := range ws {
			if err := p.MatMul(out, x, w, 1); err != nil {
				b.Fatal(err)
			}
		}
		return float64(len(ws)*len(w0.Data)) / time.Since(t0).Seconds() / 1e9
	}
	read()
	ratios := make([][2][]float64, len(configs))
	var reads [2][]float64
	for b.Loop() {
		r := read()
		mode := 0
		if r > 65 {
			mode = 1
		}
		reads[mode] = append(reads[mode], r)
		for i, c := range configs {
			c.set()
			ratios[i][mode] = append(ratios[i][mode], pass()/r)
		}
	}
	for mode, name := range []string{"lo", "hi"} {
		if len(reads[mode]) == 0 {
			continue
		}
		b.ReportMetric(float64(len(reads[mode])), name+"-turns")
		b.ReportMetric(median(append([]float64(nil), reads[mode]...)), name+"-read-GB/s")
		for i, c := range configs {
			b.ReportMetric(median(append([]float64(nil), ratios[i][mode]...)), fmt.Sprintf("%s-%s/read", name, c.name))
		}
	}
}
