package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// w8Weight returns a random W8A8 weight [n, k] (one all-zero row when n > 2) and its floats.
func w8Weight(rng *rand.Rand, n, k int) (*tensor.Tensor, []float32) {
	data := make([]byte, n*(k+4))
	f := make([]float32, n*k)
	row := make([]float32, k)
	for r := 0; r < n; r++ {
		for i := range row {
			row[i] = float32(rng.NormFloat64()) * float32(1+r%5)
			if r == 2 {
				row[i] = 0
			}
		}
		tensor.QuantizeRowW8A8(row, data[r*(k+4):(r+1)*(k+4)])
		if err := tensor.DequantizeRow(tensor.W8A8, data[r*(k+4):(r+1)*(k+4)], f[r*k:(r+1)*k]); err != nil {
			panic(err)
		}
	}
	packed, err := tensor.PackW8A8(data, n, k)
	if err != nil {
		panic(err)
	}
	w := &tensor.Tensor{Name: "w", Type: tensor.W8A8, Shape: []int{n, k}, Data: packed}
	for r := 0; r < n; r++ { // the packed rows read back as written
		if got := w.RowData(r); string(got) != string(data[r*(k+4):(r+1)*(k+4)]) {
			panic(fmt.Sprintf("w8a8 n=%d k=%d: row %d reads back as %v, want %v", n, k, r, got, data[r*(k+4):(r+1)*(k+4)]))
		}
	}
	return w, f
}

func w8X(rng *rand.Rand, m, k int) []float32 {
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if i%97 == 5 {
			x[i] *= 20 // outliers
		}
	}
	if m > 1 {
		clear(x[k : 2*k]) // a zero token
	}
	return x
}

// w8Sets are the kernel sets this CPU runs.
func w8Sets() []w8Kernels {
	s := []w8Kernels{w8Go}
	for _, k := range []w8Kernels{w8AVX2, w8VNNI} {
		if k.g1p8 != nil {
			s = append(s, k)
		}
	}
	return s
}

// TestW8A8Paths: every kernel set (Go, AVX2, VNNI, and the AMX tiles where k is a multiple of
// 64) gives the same bits on every shape
// (tails of groups, panels, k not a multiple of 4, one-token and wide panels), equal to the
// float64 of the same quantized math within float32 rounding, and close to the unquantized
// product.
func TestW8A8Paths(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 8))
	pool := NewPool(3)
	for _, n := range []int{16, 13, 37, 70} {
		for _, k := range []int{4, 8, 64, 102, 2048} {
			w, wf := w8Weight(rng, n, k)
			for _, m := range []int{1, 3, 7, 8, 9, 17, 64} {
				x := w8X(rng, m, k)
				var first []float32
				sets := w8Sets()
				if w8AMX2 != nil && k%64 == 0 {
					sets = append(sets, w8Kernels{name: "amx"})
				}
				for _, kn := range sets {
					out := make([]float32, m*n+3)
					for i := range out {
						out[i] = 7 // canary
					}
					pk := w8PackOf(w)
					a := quantizeW8(pool, x, m, k, kn.name == "amx")
					w8Run(pool, kn, out[:m*n], a, pk)
					// float64 of the quantized math
					for tk := 0; tk < m; tk++ {
						for r := 0; r < n; r++ {
							var s int64
							wr := w.RowData(r)
							for i := 0; i < k; i++ {
								s += int64(int8(wr[i])) * int64(a.q(tk, i))
							}
							dw := float64(math.Float32frombits(le32(wr[k:])))
							want := float64(s) * dw * float64(a.dx[tk])
							if d := math.Abs(float64(out[tk*n+r]) - want); d > 1e-6*math.Abs(want)+1e-30 {
								t.Fatalf("%s n=%d k=%d m=%d out[%d,%d] = %g, want %g", kn.name, n, k, m, tk, r, out[tk*n+r], want)
							}
							// the weight is exact (wf is dequantized): the error is x's rounding, at
							// most half a step per term
							var f, wa float64
							for i := 0; i < k; i++ {
								f += float64(wf[r*k+i]) * float64(x[tk*k+i])
								wa += math.Abs(float64(wf[r*k+i]))
							}
							if d := math.Abs(float64(out[tk*n+r]) - f); d > 0.501*float64(a.dx[tk])*wa+1e-4*math.Abs(f)+1e-6 {
								t.Fatalf("%s n=%d k=%d m=%d out[%d,%d] = %g, unquantized %g (Σ|w| %g)", kn.name, n, k, m, tk, r, out[tk*n+r], f, wa)
							}
						}
					}
					for i := m * n; i < len(out); i++ {
						if out[i] != 7 {
							t.Fatalf("%s n=%d k=%d m=%d: wrote past the output", kn.name, n, k, m)
						}
					}
					w8ActPool.Put(a)
					if first == nil {
						first = out
						continue
					}
					for i := range first {
						if math.Float32bits(first[i]) != math.Float32bits(out[i]) {
							t.Fatalf("%s n=%d k=%d m=%d: out[%d] = %g, go %g", kn.name, n, k, m, i, out[i], first[i])
						}
					}
				}
			}
		}
	}
}

// q returns token t's quantized value i.
func (a *w8Acts) q(t, i int) int8 {
	pan, lane := t/a.width, t%a.width
	return int8(a.x[pan*a.width*a.nq*4+(i/4)*4*a.width+4*lane+i%4])
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// TestMatMulW8A8: MatMul sends W8A8 weights to the int8 path (bit-identical per row whatever m
// is, so batch-invariant), MatMulShared and MatMulInvariant agree with it, and Reference
// still dequantizes.
func TestMatMulW8A8(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pool := NewPool(2)
	w, _ := w8Weight(rng, 45, 256)
	w2, _ := w8Weight(rng, 20, 256)
	x := w8X(rng, 33, 256)
	out := make([]float32, 33*45)
	if err := pool.MatMul(out, x, w, 33); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []int{0, 5, 32} {
		one := make([]float32, 45)
		if err := pool.MatMulInvariant(one, x[tk*256:(tk+1)*256], w, 1); err != nil {
			t.Fatal(err)
		}
		for r := range one {
			if math.Float32bits(one[r]) != math.Float32bits(out[tk*45+r]) {
				t.Fatalf("token %d row %d: alone %g, in the batch %g", tk, r, one[r], out[tk*45+r])
			}
		}
	}
	o1, o2 := make([]float32, 33*45), make([]float32, 33*20)
	if err := pool.MatMulShared([][]float32{o1, o2}, x, []*tensor.Tensor{w, w2}, 33); err != nil {
		t.Fatal(err)
	}
	for i := range o1 {
		if o1[i] != out[i] {
			t.Fatalf("shared out[%d] = %g, MatMul %g", i, o1[i], out[i])
		}
	}
	Reference = true
	ref := make([]float32, 33*45)
	err := pool.MatMul(ref, x, w, 33)
	Reference = false
	if err != nil {
		t.Fatal(err)
	}
	for i := range ref {
		var amax, wa float64 // the token's step and the row's Σ|w| bound the rounding error
		for _, v := range x[i/45*256 : i/45*256+256] {
			amax = max(amax, math.Abs(float64(v)))
		}
		wrow := make([]float32, 256)
		tensor.DequantizeRow(tensor.W8A8, w.RowData(i%45), wrow)
		for _, v := range wrow {
			wa += math.Abs(float64(v))
		}
		if math.Abs(float64(ref[i]-out[i])) > 0.501*amax/127*wa+1e-4*math.Abs(float64(ref[i]))+1e-5 {
			t.Fatalf("reference out[%d] = %g, int8 path %g", i, ref[i], out[i])
		}
	}
}

// TestW8QuantAsm: the assembly activation quantizer writes the same bytes, scales and
// corrections as the Go one (ties at .5 included), for wide and one-token panels and k with
// a tail past the last multiple of 16.
func TestW8QuantAsm(t *testing.T) {
	if w8QuantFast == nil {
		t.Skip("no assembly quantizer on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{16, 48, 100, 2048} {
		for _, m := range []int{1, 5, 8, 19} {
			x := w8X(rng, m, k)
			for i := 2 * k; i < len(x); i += 3 { // values on rounding ties: x·127/amax = j + 0.5
				x[i] = float32(i%50) + 0.5
			}
			for tk := 2; tk < m; tk++ {
				x[tk*k] = 127 // amax 127: id = 1
			}
			fa, fq := w8AmaxFast, w8QuantFast
			w8AmaxFast, w8QuantFast = nil, nil
			g := quantizeW8(Serial, x, m, k, false)
			w8AmaxFast, w8QuantFast = fa, fq
			gx, gd, gc := append([]byte(nil), g.x...), append([]float32(nil), g.dx...), append([]int32(nil), g.cx...)
			a := quantizeW8(Serial, x, m, k, false)
			for i := range gx {
				if gx[i] != a.x[i] {
					t.Fatalf("k=%d m=%d: byte %d = %d, Go %d", k, m, i, int8(a.x[i]), int8(gx[i]))
				}
			}
			for i := range gd {
				if gd[i] != a.dx[i] || gc[i] != a.cx[i] {
					t.Fatalf("k=%d m=%d token %d: dx %g cx %d, Go %g %d", k, m, i, a.dx[i], a.cx[i], gd[i], gc[i])
				}
			}
		}
	}
}
