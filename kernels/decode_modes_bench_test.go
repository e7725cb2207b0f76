package kernels

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkDecodeModes compares decode configurations of the one-token matmul against a plain
// read of the same memory at the same moments, in both of the bandwidth modes the Zen 5 VM
// switches between (about 50-55 and 70-90 GB/s for two threads): 512 MiB of huge-page
// 5632 x 2048 matrices (Q8_0, Q4_0, F16, BF16, Q4_K, Q6_K), and each turn a read (two goroutines, the f32 Dot of each
// half with itself) followed by one pass of every configuration over all the matrices. Each
// configuration's GB/s over the read's of its turn is reported as the median over the turns
// whose read was above 65 GB/s ("hi") and over the others ("lo"). The configurations are four
// and eight streams a worker; a kernel variant to compare (the generators' prefetch choices,
// asmgen/quant and asmgen/float) joins them the same way:
//
//	go test ./kernels -run X -bench DecodeModes -benchtime 40x
func BenchmarkDecodeModes(b *testing.B) {
	defer func(s8, s8q4, f8 bool) { useStreams8[0], useStreams8[1], useF16x8 = s8, s8q4, f8 }(useStreams8[0], useStreams8[1], useF16x8)
	r := rand.New(rand.NewPCG(1, 2))
	f32 := f32Tensor("w", []int{5632, 2048}, qRandVec(r, 5632*2048, 0.1))
	f16, _ := tensor.Convert(f32, tensor.F16)
	bf16, _ := tensor.Convert(f32, tensor.BF16)
	for _, c := range []struct {
		w0      *tensor.Tensor
		streams func(eight bool)
	}{
		{randQuantFast(b, tensor.Q8_0, 5632, 2048), func(eight bool) { useStreams8[0] = eight }},
		{randQuantFast(b, tensor.Q4_0, 5632, 2048), func(eight bool) { useStreams8[1] = eight }},
		{f16, func(eight bool) { useF16x8 = eight && hasF16x8 }},
		{bf16, nil}, // four streams only
		{randQuantFast(b, tensor.Q4_K, 5632, 2048), nil},
		{randQuantFast(b, tensor.Q6_K, 5632, 2048), nil},
	} {
		b.Run(c.w0.Type.String(), func(b *testing.B) {
			configs := map[string]func(){"s4": func() {}}
			if c.streams != nil {
				configs = map[string]func(){"s4": func() { c.streams(false) }, "s8": func() { c.streams(true) }}
			}
			decodeModes(b, c.w0, configs)
		})
	}
}

// decodeModes runs BenchmarkDecodeModes on copies of w0 for the configurations set up by
// configs' functions.
func decodeModes(b *testing.B, w0 *tensor.Tensor, configs map[string]func()) {
	ws, release := hugeCopies(b, w0, 1, 512<<20)
	defer release()
	region := unsafe.Slice((*float32)(unsafe.Pointer(&ws[0].Data[0])), len(ws)*len(w0.Data)/4)
	n, k := w0.Shape[0], w0.Shape[1]
	x := qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1)
	out := make([]float32, n)
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
	ratios := map[string]*[2][]float64{}
	for name := range configs {
		ratios[name] = new([2][]float64)
	}
	var reads [2][]float64
	for b.Loop() {
		rd := read()
		mode := 0
		if rd > 65 {
			mode = 1
		}
		reads[mode] = append(reads[mode], rd)
		for name, set := range configs {
			set()
			ratios[name][mode] = append(ratios[name][mode], pass()/rd)
		}
	}
	for mode, m := range []string{"lo", "hi"} {
		if len(reads[mode]) == 0 {
			continue
		}
		b.ReportMetric(float64(len(reads[mode])), m+"-turns")
		b.ReportMetric(median(reads[mode]), m+"-read-GB/s")
		for name := range configs {
			b.ReportMetric(median(ratios[name][mode]), m+"-"+name+"/read")
		}
	}
}
