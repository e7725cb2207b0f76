package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// BenchmarkPagedDecodeCold runs one decode row's paged attention over the K/V of twelve
// layers whose pools the caches no longer hold, as in a decode step, where the weights'
// stream evicts each layer's K/V before the next step reads it again: a 64 MiB buffer is read
// before each pass over the layers (untimed). The ways of reading a chunk take turns pass by
// pass, so that they see the same host, each reported as µs per layer: "default" (what runs:
// chunkRowsZ's kernels where rowsZ holds, else segments), "segments" (chunkRowMajor, with and
// without the software prefetch), and "stream", the same K/V bytes summed in address order,
// one contiguous share per worker: what memory gives. (docs/kernels-float.md has the item
// after item loop's figures, measured with this benchmark before that loop was removed.)
// Shapes: stories110M (12 heads of 64, no GQA), TinyLlama (32 heads over 4 KV heads),
// Qwen3-0.6B (16 over 8, head dim 128), Llama 3 8B (32 over 8, 128); blocks of 16 positions,
// numbered in order as a fresh sequence gets them.
func BenchmarkPagedDecodeCold(b *testing.B) {
	const layers, bs = 12, 16
	flush := make([]float32, 16<<20)
	var sink float32
	modes := []struct {
		name      string
		z, prefet bool
	}{{"default", true, true}, {"segments", false, true}, {"segments-nopf", false, false}, {"stream", false, false}}
	for _, sh := range []struct {
		name           string
		heads, kvh, hd int
	}{{"stories110M", 12, 12, 64}, {"tinyllama", 32, 4, 64}, {"qwen3-0.6B", 16, 8, 128}, {"llama3-8B", 32, 8, 128}} {
		for _, nPos := range []int{64, 256, 1024} {
			r := rand.New(rand.NewPCG(1, 2))
			kvd, qd := sh.kvh*sh.hd, sh.heads*sh.hd
			nb := (nPos + bs - 1) / bs
			table := make([]int32, nb)
			for i := range table {
				table[i] = int32(i)
			}
			kc, vc := make([][]float32, layers), make([][]float32, layers)
			for l := range kc {
				kc[l], vc[l] = make([]float32, nb*bs*kvd), make([]float32, nb*bs*kvd)
				for i := range kc[l] {
					kc[l][i], vc[l][i] = r.Float32()*2-1, r.Float32()*2-1
				}
			}
			q := make([]float32, qd)
			for i := range q {
				q[i] = r.Float32()*2 - 1
			}
			out := make([]float32, qd)
			rows := []PagedRow{{Pos: nPos - 1, Table: table}}
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				b.Run(fmt.Sprintf("%s/pos=%d/t=%d", sh.name, nPos, th), func(b *testing.B) {
					defer func(z, pf bool) { useRowsZ, prefetchKV = z, pf }(useRowsZ, prefetchKV)
					var pa PagedAttention
					total := make([]time.Duration, len(modes))
					for b.Loop() {
						for mi, m := range modes {
							useRowsZ, prefetchKV = m.z, m.prefet
							evict(b, flush)
							t0 := time.Now()
							for l := range layers {
								if m.name == "stream" && useFloatAsm { // the same bytes read in order: what memory gives
									kl, vl := kc[l], vc[l]
									p.For(th, 1, func(lo, hi int) {
										for w := lo; w < hi; w++ {
											a, e := w*len(kl)/th&^7, (w+1)*len(kl)/th&^7
											sink += float32(sumSqF64(&kl[a], e-a) + sumSqF64(&vl[a], e-a))
										}
									})
									continue
								}
								if err := pa.Run(p, out, q, kc[l], vc[l], rows, sh.heads, sh.kvh, sh.hd, bs); err != nil {
									b.Fatal(err)
								}
							}
							total[mi] += time.Since(t0)
						}
					}
					for mi, m := range modes {
						b.ReportMetric(float64(total[mi].Nanoseconds())/float64(b.N*layers)/1e3, "µs/layer-"+m.name)
					}
				})
			}
		}
	}
	_ = sink
}

// benchWarm skips the flush (LLMCLOUD_BENCH_WARM=1): the K/V stays in whatever cache holds it,
// which separates the kernels' compute from their memory stalls.
var benchWarm = os.Getenv("LLMCLOUD_BENCH_WARM") == "1"

// BenchmarkPagedDecodeColdKV is BenchmarkPagedDecodeCold's stories110M shape over f16, bf16 and
// q8_0 caches: what runs ("default": chunkRowsZ's kernels on f16 and bf16 pools, one worker
// for their narrow rows) against the segment-major chunks, alternated pass by pass.
func BenchmarkPagedDecodeColdKV(b *testing.B) {
	const layers, bs, heads, kvh, hd = 12, 16, 12, 12, 64
	flush := make([]float32, 16<<20)
	for _, typ := range []KVDType{KVF16, KVBF16, KVQ8} {
		for _, nPos := range []int{256, 1024} {
			r := rand.New(rand.NewPCG(1, 2))
			kvd := kvh * hd
			fm, err := NewKVFormat(typ, kvd, hd)
			if err != nil {
				b.Fatal(err)
			}
			nb := (nPos + bs - 1) / bs
			table := make([]int32, nb)
			for i := range table {
				table[i] = int32(i)
			}
			kv := make([]KVLayer, layers)
			row := make([]float32, kvd)
			for l := range kv {
				kv[l] = KVLayer{KQ: make([]byte, nb*bs*fm.RowBytes), VQ: make([]byte, nb*bs*fm.RowBytes), Fmt: fm}
				for i := range nb * bs {
					for j := range row {
						row[j] = r.Float32()*2 - 1
					}
					fm.StoreRow(kv[l].KQ, i, row)
					fm.StoreRow(kv[l].VQ, i, row)
				}
			}
			q := make([]float32, heads*hd)
			for i := range q {
				q[i] = r.Float32()*2 - 1
			}
			out := make([]float32, heads*hd)
			rows := []PagedRow{{Pos: nPos - 1, Table: table}}
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				b.Run(fmt.Sprintf("%v/pos=%d/t=%d", typ, nPos, th), func(b *testing.B) {
					defer func(v bool) { useRowsZ = v }(useRowsZ)
					modes := []string{"default", "segments"}
					total := make([]time.Duration, len(modes))
					var pa PagedAttention
					for b.Loop() {
						for mi := range modes {
							useRowsZ = mi == 0
							evict(b, flush)
							t0 := time.Now()
							for l := range layers {
								if err := pa.RunLayer(p, out, q, kv[l], rows, heads, kvh, hd, bs, AttnOpts{}); err != nil {
									b.Fatal(err)
								}
							}
							total[mi] += time.Since(t0)
						}
					}
					for mi, m := range modes {
						b.ReportMetric(float64(total[mi].Nanoseconds())/float64(b.N*layers)/1e3, "µs/layer-"+m)
					}
				})
			}
		}
	}
}

// evictSink keeps evict's reads.
var evictSink float32

// evict reads flush (64 MiB) outside the timer, so that the caches no longer hold the K/V
// (unless benchWarm).
func evict(b *testing.B, flush []float32) {
	b.StopTimer()
	var s float32
	for i := 0; i < len(flush) && !benchWarm; i += 16 {
		s += flush[i]
	}
	evictSink += s
	b.StartTimer()
}
