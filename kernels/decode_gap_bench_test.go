package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkDecodeGap measures what the gaps between a decode step's matmuls cost, and whether
// prefetching the next matmul's first rows during a gap wins it back: the one-token matmuls of
// eight TinyLlama Q8_0 layers as the forward calls them (q/k/v and gate/up each one
// MatMulShared, o and down alone), from MADV_HUGEPAGE memory, on two workers. Each iteration
// runs the variants back to back: no gap; a gap of gapWork on the caller after every matmul
// (the norms and attention of a real step), as a pool job whose worker part is idle; the same
// job with the worker prefetching the start of each of the next matmul's streams meanwhile (pf
// bytes each), of its own streams only, or each part its own before the caller's gap. It
// reports the time a step loses per gap beyond the gap itself. On the Zen 5 VM (5 Dec 2026):
// -4 to +2 µs for every variant, i.e. nothing lost and nothing won.
//
//	go test ./kernels -run X -bench DecodeGap -benchtime 40x
func BenchmarkDecodeGap(b *testing.B) {
	if !useAVX512 || !quantVNNI {
		b.Skip("no AVX-512 VNNI")
	}
	const dim, ffn, kv, layers = 2048, 5632, 256, 8
	r := rand.New(rand.NewPCG(1, 2))
	type op struct {
		ws   []*tensor.Tensor
		outs [][]float32 // the outputs, one per weight
	}
	var ops []op
	var all []*tensor.Tensor
	for range layers {
		for _, shapes := range [][][2]int{{{dim, dim}, {kv, dim}, {kv, dim}}, {{dim, dim}}, {{ffn, dim}, {ffn, dim}}, {{dim, ffn}}} {
			var o op
			for _, sh := range shapes {
				w := randQuantFast(b, tensor.Q8_0, sh[0], sh[1])
				o.ws = append(o.ws, w)
				all = append(all, w)
			}
			ops = append(ops, o)
		}
	}
	bytes, release := intoHuge(b, all)
	defer release()
	x := qRandVec(r, ffn, 1)
	for i := range ops {
		for _, w := range ops[i].ws {
			ops[i].outs = append(ops[i].outs, make([]float32, w.Shape[0]))
		}
	}
	p := NewPool(2)
	// starts[i] are the first bytes of each stream of op i's rows on p (forStreamsN's split).
	starts := make([][][]byte, len(ops))
	for i, o := range ops {
		var segs []gemvSeg
		total := 0
		for _, w := range o.ws {
			segs = append(segs, gemvSeg{w: w.Data, dt: w.Type, n: w.Shape[0], k: w.Shape[1]})
			total += w.Shape[0]
		}
		streams := 4
		if streams8(segs) {
			streams = 8
		}
		parts := min(p.Workers(), max(1, total/(streams*streamStep)))
		rs, _ := segs[0].dt.RowBytes(segs[0].k)
		for s := range parts {
			lo, hi := s*total/parts, (s+1)*total/parts
			for j := range streams {
				row := lo + j*((hi-lo)/streams)
				si, st := segOf(segs, row)
				starts[i] = append(starts[i], segs[si].w[(row-st)*rs:])
			}
		}
	}
	gap := func(d time.Duration) {
		for t0 := time.Now(); time.Since(t0) < d; {
		}
	}
	// A variant: whether the caller works gapWork after each matmul, and which of the next
	// matmul's stream heads part 0 (the caller, before its gap) and part 1 prefetch.
	type variant struct {
		name string
		gap  bool
		pf   func(part int, heads [][]byte) [][]byte
	}
	none := func(int, [][]byte) [][]byte { return nil }
	own := func(part int, h [][]byte) [][]byte { return h[part*len(h)/2 : (part+1)*len(h)/2] }
	variants := []variant{
		{"nogap", false, none},
		{"gap", true, none},
		{"gap+wpf", true, func(part int, h [][]byte) [][]byte { return h[:part*len(h)] }},
		{"gap+wpfown", true, func(part int, h [][]byte) [][]byte { return own(part, h)[:part*len(h)/2] }},
		{"gap+bothpf", true, own},
	}
	for _, gapWork := range []time.Duration{5 * time.Microsecond, 15 * time.Microsecond} {
		for _, pf := range []int{4 << 10, 16 << 10} {
			b.Run(fmt.Sprintf("gap%v/pf%dK", gapWork, pf>>10), func(b *testing.B) {
				run := func(v variant) float64 {
					t0 := time.Now()
					for i, o := range ops {
						var err error
						if len(o.ws) == 1 {
							err = p.MatMul(o.outs[0], x[:o.ws[0].Shape[1]], o.ws[0], 1)
						} else {
							err = p.MatMulShared(o.outs, x[:o.ws[0].Shape[1]], o.ws, 1)
						}
						if err != nil {
							b.Fatal(err)
						}
						if !v.gap {
							continue
						}
						next := starts[(i+1)%len(ops)]
						p.For(2, 1, func(lo, hi int) {
							for _, s := range v.pf(lo, next) {
								prefetchRows(&s[0], 0, 1, min(pf, len(s)))
							}
							if lo == 0 {
								gap(gapWork)
							}
						})
					}
					return time.Since(t0).Seconds()
				}
				secs := make([][]float64, len(variants))
				for b.Loop() {
					for i, v := range variants {
						secs[i] = append(secs[i], run(v))
					}
				}
				gaps := float64(len(ops)) * gapWork.Seconds()
				base := median(secs[0])
				for i, v := range variants {
					s := median(secs[i])
					b.ReportMetric(float64(bytes)/s/1e9, v.name+"-GB/s")
					if v.gap { // the step's time beyond the no-gap step and the gaps themselves, per gap
						b.ReportMetric((s-base-gaps)/float64(len(ops))*1e6, v.name+"-extra-µs/gap")
					}
				}
			})
		}
	}
}
