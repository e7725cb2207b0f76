package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// randQuantFast fills an [n, k] weight of type dt by repeating a few quantized random rows
// (quantizing 32000x2048 values row by row would dominate the benchmark setup).
func randQuantFast(b *testing.B, dt tensor.DType, n, k int) *tensor.Tensor {
	rng := rand.New(rand.NewPCG(1, uint64(dt)))
	base := randQuant(b, rng, dt, 8, k)
	rb := len(base.Data) / 8
	data := make([]byte, n*rb)
	for r := 0; r < n; r++ {
		copy(data[r*rb:], base.Data[(r%8)*rb:(r%8+1)*rb])
	}
	return &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: data}
}

// hugeCopies returns copies of w0 (at least minCopies, and enough to fill target bytes) in
// 2 MiB-aligned MADV_HUGEPAGE memory, as decode reads its mmapped model file
// (internal/mmap), so that a benchmark walking them reads from DRAM; release frees them.
func hugeCopies(b *testing.B, w0 *tensor.Tensor, minCopies, target int) (ws []*tensor.Tensor, release func() error) {
	copies := max(minCopies, target/len(w0.Data))
	mem, release, err := mmap.AnonHuge(copies * len(w0.Data))
	if err != nil {
		b.Fatal(err)
	}
	ws = make([]*tensor.Tensor, copies)
	for i := range ws {
		d := mem[i*len(w0.Data) : (i+1)*len(w0.Data)]
		copy(d, w0.Data)
		ws[i] = &tensor.Tensor{Name: w0.Name, Type: w0.Type, Shape: w0.Shape, Data: d}
	}
	return ws, release
}

// intoHuge moves the data of ws into one 2 MiB-aligned MADV_HUGEPAGE region, one after
// another, as decode reads its mmapped model file, and returns the bytes moved and the
// region's release.
func intoHuge(b *testing.B, ws []*tensor.Tensor) (bytes int, release func() error) {
	for _, w := range ws {
		bytes += len(w.Data)
	}
	mem, release, err := mmap.AnonHuge(bytes)
	if err != nil {
		b.Fatal(err)
	}
	off := 0
	for _, w := range ws {
		off += copy(mem[off:], w.Data)
		w.Data = mem[off-len(w.Data) : off]
	}
	return bytes, release
}

var benchShapes = [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}}

// BenchmarkQuantGEMV: decode (m=1), GB/s of weight bytes; ref = the dequantizing reference path,
// avx2 = the AVX2 kernels on a CPU that has the VNNI ones, vnnitile = Q4_K/Q6_K on the VNNI
// one-row tile instead of the AVX2 four-row kernels (useRowsK4 off).
func BenchmarkQuantGEMV(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		for _, sh := range benchShapes {
			// Enough copies of the weight that one pass over them (~100 MB) streams from DRAM,
			// as a decode step over all layers does.
			w0 := randQuantFast(b, dt, sh[0], sh[1])
			ws := []*tensor.Tensor{w0}
			for len(ws)*len(w0.Data) < 100<<20 {
				ws = append(ws, &tensor.Tensor{Name: "w", Type: dt, Shape: w0.Shape, Data: append([]byte(nil), w0.Data...)})
			}
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), sh[1], 1)
			out := make([]float32, sh[0])
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				for _, mode := range []string{"", "avx2", "vnnitile", "ref"} {
					if mode == "ref" && (sh[0] != 2048 || sh[1] != 2048) || mode == "avx2" && !quantVNNI ||
						mode == "vnnitile" && (!quantVNNI || !isK(dt)) {
						continue
					}
					name := fmt.Sprintf("%s/%dx%d/t%d", dt, sh[0], sh[1], th)
					if mode != "" {
						name += "/" + mode
					}
					b.Run(name, func(b *testing.B) {
						Reference = mode == "ref"
						vnni := quantVNNI
						quantVNNI = vnni && mode != "avx2"
						useRowsK4 = mode != "vnnitile"
						defer func() { Reference, quantVNNI, useRowsK4 = false, vnni, true }()
						b.SetBytes(int64(len(w0.Data)))
						i := 0
						for b.Loop() {
							if err := p.MatMul(out, x, ws[i%len(ws)], 1); err != nil {
								b.Fatal(err)
							}
							i++
						}
					})
				}
			}
		}
	}
}

// BenchmarkQuantGEMM: prefill (m tokens), GOP/s (2*m*n*k); gemv = m separate GEMV calls, avx2 =
// the AVX2 tiles on a CPU that has the VNNI ones, pairs = the Q4_0 pair tiles (the quad tiles
// off), blocks = the Q4_0 block tiles, rowsouter = the pair tiles rows outer.
func BenchmarkQuantGEMM(b *testing.B) {
	const m = 64
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		for _, sh := range benchShapes[:3] {
			n, k := sh[0], sh[1]
			w := randQuantFast(b, dt, n, k)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				for _, mode := range []string{"gemm", "avx2", "pairs", "blocks", "rowsouter", "gemv", "ref"} {
					if (mode == "blocks" || mode == "rowsouter" || mode == "pairs") && (dt != tensor.Q4_0 || !usePairs()) || mode == "avx2" && !quantVNNI || mode != "gemm" && mode != "avx2" && mode != "blocks" && mode != "rowsouter" && mode != "pairs" && (n != 2048 || k != 2048) {
						continue
					}
					b.Run(fmt.Sprintf("%s/%dx%d/m%d/t%d/%s", dt, n, k, m, th, mode), func(b *testing.B) {
						Reference = mode == "ref"
						vnni, tp, oq, ox := quantVNNI, tilesP, q4Toks, x4Toks
						quantVNNI = vnni && mode != "avx2" && mode != "blocks" && mode != "rowsouter" && mode != "pairs"
						pairsTokensOuter = mode != "rowsouter"
						if mode == "blocks" || mode == "rowsouter" || mode == "pairs" {
							q4Toks, x4Toks = 0, 0 // Q4_0 on the pair tiles (the path before the quad tiles)
						}
						if mode == "blocks" {
							tilesP = [3][5]tileFunc{} // Q4_0 on the block tiles (the path before the pair tiles)
						}
						defer func() { Reference, quantVNNI, tilesP, pairsTokensOuter, q4Toks, x4Toks = false, vnni, tp, true, oq, ox }()
						for b.Loop() {
							if mode == "gemv" {
								for i := 0; i < m; i++ {
									_ = p.MatMul(out[i*n:(i+1)*n], x[i*k:(i+1)*k], w, 1)
								}
							} else if err := p.MatMul(out, x, w, m); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
					})
				}
			}
		}
	}
}

// BenchmarkQuantDot: one kernel call in L1 (2048 values), GB/s of weight bytes.
func BenchmarkQuantDot(b *testing.B) {
	const k = 2048
	rng := rand.New(rand.NewPCG(4, 5))
	x := qRandVec(rng, 4*k, 1)
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := dt == tensor.Q4_0
		w := randQuant(b, rng, dt, 8, k)
		rs := len(w.Data) / 8
		a := getQ8Acts(4, k, q4)
		a.quantize(Serial, x, q4)
		var cp *int32
		if q4 {
			cp = &a.corr[0]
		}
		out := make([]float32, 32)
		for _, rt := range [][2]int{{1, 1}, {2, 1}, {4, 1}, {8, 1}, {2, 4}} {
			for _, ref := range []bool{false, true} {
				f := quantTiles[btoi(q4)][rt[0]][rt[1]]
				name := fmt.Sprintf("%s/tile%dx%d", dt, rt[0], rt[1])
				if ref {
					f, name = refTile(q4, rt[0], rt[1]), name+"/go"
				}
				b.Run(name, func(b *testing.B) {
					b.SetBytes(int64(rs * rt[0] * rt[1]))
					for b.Loop() {
						f(&w.Data[0], rs, &a.qs[0], k, &a.d[0], cp, k/32, &out[0], 8)
					}
				})
			}
		}
	}
	// Decode row kernels over 8 rows in L1: AVX2 (rows, Q8_0) vs AVX-512 VNNI (rowsZ).
	for qi, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := qi == 1
		w := randQuant(b, rng, dt, 8, k)
		rs := len(w.Data) / 8
		a := getQ8Acts(1, k, q4)
		a.quantize(Serial, x[:k], q4)
		a.pairLayout2(q4)
		out := make([]float32, 8)
		if !q4 { // Q4_0's AVX2 decode is the four-row kernel (quant_decode_bench_test.go)
			b.Run(dt.String()+"/rows", func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					q8Rows(&w.Data[0], rs, 8, &a.qs[0], &a.d[0], k/32, &out[0])
				}
			})
		}
		b.Run(dt.String()+"/rowsZ", func(b *testing.B) {
			b.SetBytes(int64(len(w.Data)))
			for b.Loop() {
				if q4 {
					rowsZ[1](&w.Data[0], rs, 8, &a.x4[0], &a.d4[0], &a.c4[0], k/128, &out[0])
				} else {
					rowsZ[0](&w.Data[0], rs, 8, &a.qs[0], &a.dz[0], &a.cz[0], k/64, &out[0])
				}
			}
		})
		if !q4 {
			b.Run(dt.String()+"/rows4Z", func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					rows4Z(&w.Data[0], rs, 8, &a.qs[0], &a.dz[0], &a.fz[0], k/64, &out[0])
				}
			})
		}
	}
	a := getQ8KActs(1, k)
	a.quantize(Serial, x[:k])
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		w := randQuant(b, rng, dt, 1, k)
		for _, ref := range []bool{false, true} {
			name := dt.String()
			if ref {
				name += "/go"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					switch {
					case dt == tensor.Q4_K && !ref:
						dotQ4K(&w.Data[0], &a.qs[0], &a.d[0], &a.bsum8[0], k/256)
					case dt == tensor.Q4_K:
						dotQ4KRef(w.Data, a.qs, a.d, a.bsum8, k/256)
					case !ref:
						dotQ6K(&w.Data[0], &a.qs[0], &a.d[0], &a.bsums[0], k/256)
					default:
						dotQ6KRef(w.Data, a.qs, a.d, a.bsums, k/256)
					}
				}
			})
		}
	}
	b.Run("quantQ8_0", func(b *testing.B) {
		qa := getQ8Acts(1, k, false)
		b.SetBytes(4 * k)
		for b.Loop() {
			quantRowQ8(x[:k], qa.qs, qa.d)
		}
	})
	b.Run("quantQ8_0/go", func(b *testing.B) {
		qa := getQ8Acts(1, k, false)
		b.SetBytes(4 * k)
		for b.Loop() {
			quantRowQ8Ref(x[:k], qa.qs, qa.d)
		}
	})
}

// BenchmarkQuantGEMVRows compares the 4-row and 8-row decode kernels (GB/s of weights, DRAM).
// pairLayout2 prepares every decode layout of token 0 (benchmarks).
func (a *q8Acts) pairLayout2(q4 bool) {
	a.prepZ(Serial, false)
	if q4 {
		a.pairLayout()
		a.prepQuad()
	}
}

func BenchmarkQuantGEMVRows(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		w0 := randQuantFast(b, dt, 5632, 2048)
		ws := []*tensor.Tensor{w0}
		for len(ws)*len(w0.Data) < 100<<20 {
			ws = append(ws, &tensor.Tensor{Name: "w", Type: dt, Shape: w0.Shape, Data: append([]byte(nil), w0.Data...)})
		}
		x := qRandVec(rand.New(rand.NewPCG(2, 3)), 2048, 1)
		out := make([]float32, 5632)
		for _, th := range []int{1, 2} {
			p := NewPool(th)
			for _, rows := range []int{4, 8} {
				b.Run(fmt.Sprintf("%s/t%d/rows%d", dt, th, rows), func(b *testing.B) {
					defer func(g int) { gemvRows = g }(gemvRows)
					gemvRows = rows
					b.SetBytes(int64(len(w0.Data)))
					i := 0
					for b.Loop() {
						_ = p.MatMul(out, x, ws[i%len(ws)], 1)
						i++
					}
				})
			}
		}
	}
}
