package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestPrepackF16MatchesDirect checks that MatMul and MatMulShared on weights registered with
// PrepackF16 (the GEMM streams their packs) give bit-identical results to gemmDirect, the
// plain AVX2 kernels on the stored rows, for m across tile remainders and both sides of
// gemmDirectMaxM, n across group and block (192) tails and k across the k block (512) and the
// 8-column tail, on 1 and 3 workers (the first weight packed on 3 workers); and that a
// weight whose data was replaced is not served from its old pack.
func TestPrepackF16MatchesDirect(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2/FMA/F16C")
	}
	defer func(z bool) { useAVX512 = z }(useAVX512)
	useAVX512 = false
	r := rand.New(rand.NewSource(12))
	p3 := NewPool(3)
	for _, s := range [][3]int{{2, 4, 8}, {3, 4, 8}, {4, 5, 16}, {5, 7, 17}, {6, 8, 520}, {7, 13, 1030}, {9, 196, 64}, {64, 200, 768}, {65, 389, 1037}, {70, 9, 7}, {100, 384, 2048}} {
		m, n, k := s[0], s[1], s[2]
		x := randVec(r, m*k, 1)
		var ws []*tensor.Tensor
		var want [][]float32
		for range 2 {
			w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
			if err != nil {
				t.Fatal(err)
			}
			ok := PrepackF16(w)
			if ok != (n >= 4 && k >= 8) {
				t.Fatalf("n=%d k=%d: PrepackF16 = %v", n, k, ok)
			}
			defer DropPackF16(w)
			ws = append(ws, w)
			o := make([]float32, m*n)
			gemmDirect(Serial, o, x, tensor.F16, w.Data, m, n, k)
			want = append(want, o)
		}
		if ws[0].Shape[0] >= 4 && ws[0].Shape[1] >= 8 && f16PackOf(p3, ws[0]) == nil {
			t.Fatalf("n=%d k=%d: no pack", n, k)
		}
		for _, p := range []*Pool{Serial, p3} {
			check := func(what string, got, want []float32) {
				t.Helper()
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d workers=%d %s: out[%d,%d] = %v, gemmDirect %v", m, n, k, p.Workers(), what, i/n, i%n, got[i], want[i])
					}
				}
			}
			nan := func() []float32 {
				o := make([]float32, m*n)
				for i := range o {
					o[i] = float32(math.NaN()) // the GEMM must overwrite, not accumulate
				}
				return o
			}
			got := nan()
			if err := p.MatMul(got, x, ws[0], m); err != nil {
				t.Fatal(err)
			}
			check("MatMul", got, want[0])
			outs := [][]float32{nan(), nan()}
			if err := p.MatMulShared(outs, x, ws, m); err != nil {
				t.Fatal(err)
			}
			check("MatMulShared[0]", outs[0], want[0])
			check("MatMulShared[1]", outs[1], want[1])
		}
	}

	// A weight whose data was replaced is not served from its old pack.
	m, n, k := 8, 16, 64
	x := randVec(r, m*k, 1)
	w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
	defer DropPackF16(w)
	PrepackF16(w)
	got := make([]float32, m*n)
	Serial.MatMul(got, x, w, m)
	w2, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
	w.Data = w2.Data
	want := make([]float32, m*n)
	gemmDirect(Serial, want, x, tensor.F16, w.Data, m, n, k)
	Serial.MatMul(got, x, w, m)
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("replaced data: out[%d] = %v, want %v (stale pack)", i, got[i], want[i])
		}
	}
}
