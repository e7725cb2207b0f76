package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

func qRandVec(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return v
}

// randQuant returns n random rows of k values quantized to dt.
func randQuant(t testing.TB, rng *rand.Rand, dt tensor.DType, n, k int) *tensor.Tensor {
	rb, err := dt.RowBytes(k)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n*rb)
	for r := 0; r < n; r++ {
		x := qRandVec(rng, k, 0.05)
		if r%5 == 3 { // a row with a zero block and an outlier
			for j := 0; j < min(k, 256); j++ {
				x[j] = 0
			}
			x[k-1] = 3
		}
		if err := tensor.QuantizeRow(dt, x, data[r*rb:(r+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	return &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: data}
}

func TestQuantRowQ8AVX2(t *testing.T) {
	if !quantAsm {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nb := range []int{1, 2, 7, 64} {
		x := qRandVec(rng, nb*32, 1)
		for j := 0; j < 32; j++ {
			x[j] = 0 // zero block
		}
		if nb > 1 {
			x[40] = 1e-30 // tiny
			x[41] = -2.5
		}
		q1, q2 := make([]int8, nb*32), make([]int8, nb*32)
		d1, d2 := make([]float32, nb), make([]float32, nb)
		quantRowQ8Ref(x, q1, d1)
		quantRowQ8(x, q2, d2) // the AVX2 kernel when quantAsm
		for i := range q1 {
			if q1[i] != q2[i] {
				t.Fatalf("nb=%d q[%d]: ref %d asm %d", nb, i, q1[i], q2[i])
			}
		}
		for i := range d1 {
			if math.Float32bits(d1[i]) != math.Float32bits(d2[i]) {
				t.Fatalf("nb=%d d[%d]: ref %g asm %g", nb, i, d1[i], d2[i])
			}
		}
	}
}

// exactQ8 is Σ_b dw*dx*Σ(q_w*q_x) in float64 for one row and one token.
func exactQ8(q4 bool, w []byte, xq []int8, xd []float32, nb int) (sum, mag float64) {
	bb := 34
	if q4 {
		bb = 18
	}
	buf := make([]float32, 32)
	for b := 0; b < nb; b++ {
		blk := w[b*bb : (b+1)*bb]
		dt := tensor.Q8_0
		if q4 {
			dt = tensor.Q4_0
		}
		_ = tensor.DequantizeRow(dt, blk, buf) // buf = dw*q
		for j := 0; j < 32; j++ {
			p := float64(buf[j]) * float64(xd[b]) * float64(xq[b*32+j])
			sum += p
			mag += math.Abs(p)
		}
	}
	return
}

func TestQuantTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for qi, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		q4 := qi == 1
		for _, nb := range []int{1, 2, 3, 5, 8, 33} {
			k := nb * 32
			w := randQuant(t, rng, dt, 8, k)
			rs := len(w.Data) / 8
			x := qRandVec(rng, 4*k, 1)
			a := getQ8Acts(4, k, q4)
			a.quantize(Serial, x, q4)
			var cp *int32
			if q4 {
				cp = &a.corr[0]
			}
			for _, R := range []int{1, 2, 4, 8} {
				for T := 1; T <= 4; T++ {
					if R >= 4 && T > 1 {
						continue
					}
					got := make([]float32, 4*9)
					want := make([]float32, 4*9)
					quantTiles[qi][R][T](&w.Data[0], rs, &a.qs[0], k, &a.d[0], cp, nb, &got[0], 9)
					refTile(q4, R, T)(&w.Data[0], rs, &a.qs[0], k, &a.d[0], cp, nb, &want[0], 9)
					for tt := 0; tt < T; tt++ {
						for r := 0; r < R; r++ {
							ex, mag := exactQ8(q4, w.Data[r*rs:], a.qs[tt*k:], a.d[tt*a.nb:], nb)
							g, wnt := got[tt*9+r], want[tt*9+r]
							if d := math.Abs(float64(g - wnt)); d > 1e-6*mag+1e-30 {
								t.Errorf("%s nb=%d tile %dx%d [%d,%d]: asm %g ref %g", dt, nb, R, T, r, tt, g, wnt)
							}
							if d := math.Abs(float64(wnt) - ex); d > 1e-5*mag+1e-30 {
								t.Errorf("%s nb=%d tile %dx%d [%d,%d]: ref %g exact %g", dt, nb, R, T, r, tt, wnt, ex)
							}
						}
					}
					for i := range got {
						if i%9 >= R || i/9 >= T {
							if got[i] != 0 {
								t.Fatalf("%s tile %dx%d wrote out of its tile at %d", dt, R, T, i)
							}
						}
					}
				}
			}
		}
	}
}

func TestQ8Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, nb := range []int{1, 2, 3, 4, 7, 64} {
		k := nb * 32
		w := randQuant(t, rng, tensor.Q8_0, 5, k)
		rs := len(w.Data) / 5
		a := getQ8Acts(1, k, false)
		a.quantize(Serial, qRandVec(rng, k, 1), false)
		got, want := make([]float32, 6), make([]float32, 6)
		q8Rows(&w.Data[0], rs, 5, &a.qs[0], &a.d[0], nb, &got[0])
		q8RowsRef(w.Data, rs, 5, a.qs, a.d, nb, want)
		for r := 0; r < 5; r++ {
			ex, mag := exactQ8(false, w.Data[r*rs:], a.qs, a.d, nb)
			if d := math.Abs(float64(got[r] - want[r])); d > 1e-6*mag {
				t.Errorf("nb=%d row %d: asm %g ref %g", nb, r, got[r], want[r])
			}
			if d := math.Abs(float64(want[r]) - ex); d > 1e-5*mag {
				t.Errorf("nb=%d row %d: ref %g exact %g", nb, r, want[r], ex)
			}
		}
		if got[5] != 0 {
			t.Errorf("wrote past nrows")
		}
	}
}

func TestQuantRowQ8K(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := qRandVec(rng, 512, 1)
	for j := 256; j < 512; j++ {
		x[j] = 0
	}
	x[7] = -9
	a := getQ8KActs(1, 512)
	a.quantize(Serial, x)
	if a.qs[7] != -127 || a.d[0] != 1/float32(-127.0/-9.0) || a.d[1] != 0 {
		t.Fatalf("q[7]=%d d=%v", a.qs[7], a.d[:2])
	}
	for g := 0; g < 16; g++ {
		var s int
		for _, q := range a.qs[g*16 : g*16+16] {
			s += int(q)
		}
		if int(a.bsums[g]) != s {
			t.Fatalf("bsum %d", g)
		}
	}
	for i := range 256 {
		if e := math.Abs(float64(float32(a.qs[i])*a.d[0] - x[i])); e > 9.0/127/2*1.0001 {
			t.Fatalf("x[%d]=%g q=%d", i, x[i], a.qs[i])
		}
	}
}

func TestDotK(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		for _, nb := range []int{1, 2, 3, 7} {
			k := nb * 256
			w := randQuant(t, rng, dt, 1, k)
			x := qRandVec(rng, k, 1)
			a := getQ8KActs(1, k)
			a.quantize(Serial, x)
			var ref, asm float32
			if dt == tensor.Q4_K {
				ref = dotQ4KRef(w.Data, a.qs, a.d, a.bsum8, nb)
				asm = dotQ4K(&w.Data[0], &a.qs[0], &a.d[0], &a.bsum8[0], nb)
			} else {
				ref = dotQ6KRef(w.Data, a.qs, a.d, a.bsums, nb)
				asm = dotQ6K(&w.Data[0], &a.qs[0], &a.d[0], &a.bsums[0], nb)
			}
			wf := make([]float32, k)
			if err := tensor.DequantizeRow(dt, w.Data, wf); err != nil {
				t.Fatal(err)
			}
			var ex, mag float64
			for i := range wf {
				p := float64(wf[i]) * float64(a.qs[i]) * float64(a.d[i/256])
				ex += p
				mag += math.Abs(p)
			}
			if d := math.Abs(float64(asm - ref)); d > 1e-6*mag {
				t.Errorf("%s nb=%d: asm %g ref %g", dt, nb, asm, ref)
			}
			if d := math.Abs(float64(ref) - ex); d > 2e-5*mag {
				t.Errorf("%s nb=%d: ref %g exact %g (mag %g)", dt, nb, ref, ex, mag)
			}
		}
	}
}

// TestMatMulQuant checks the whole dispatch (GEMV, GEMM tiles, tails, token chunks, threads)
// against the float64 value of the same quantized math.
func TestMatMulQuant(t *testing.T) { checkMatMulQuant(t) }

// TestMatMulQuantGo runs the same checks with the plain-Go kernels installed.
func TestMatMulQuantGo(t *testing.T) {
	tiles, q, k4, k6, q8r := quantTiles, quantRowQ8, dotQ4K, dotQ6K, q8Rows
	tz, rz, tk := tilesZ, rowsZ, tilesKZ
	useAMX = false // the VNNI twins (Q4_K / Q6_K prefill would take the AMX tiles; TestMatMulQuantAMXK runs their twins)
	defer func() { useAMX = true }()
	defer func() { quantTiles, quantRowQ8, dotQ4K, dotQ6K, q8Rows = tiles, q, k4, k6, q8r }()
	defer func() { tilesZ, rowsZ, tilesKZ = tz, rz, tk }()
	for t := 1; t <= 8; t++ {
		tilesKZ[0][t], tilesKZ[1][t] = refTileKZ(false, t), refTileKZ(true, t)
	}
	rowsZ[0] = func(w *byte, rs int, nrows int, xs *int8, xd *float32, corr *int32, nu int, out *float32) {
		rowsZRef(false, unsafe.Slice(w, (nrows-1)*rs+nu*68), rs, nrows, unsafe.Slice(xs, nu*64),
			unsafe.Slice(xd, nu*16), unsafe.Slice(corr, nu*16), nu, unsafe.Slice(out, nrows))
	}
	rowsZ[1] = func(w *byte, rs int, nrows int, xs *int8, xd *float32, corr *int32, nu int, out *float32) {
		rowsZRef(true, unsafe.Slice(w, (nrows-1)*rs+nu*72), rs, nrows, unsafe.Slice(xs, nu*128),
			unsafe.Slice(xd, nu*16), unsafe.Slice(corr, nu*16), nu, unsafe.Slice(out, nrows))
	}
	q8Rows = func(w *byte, rs int, nrows int, xq *int8, xd *float32, nb int, out *float32) {
		q8RowsRef(unsafe.Slice(w, (nrows-1)*rs+nb*34), rs, nrows, unsafe.Slice(xq, nb*32),
			unsafe.Slice(xd, nb), nb, unsafe.Slice(out, nrows))
	}
	for qi := 0; qi < 2; qi++ {
		for r := 1; r <= 8; r++ {
			for t := 1; t <= 4; t++ {
				quantTiles[qi][r][t] = refTile(qi == 1, r, t)
				if r <= 4 {
					tilesZ[qi][r][t] = refTileZ(qi == 1, r, t)
				}
			}
		}
	}
	quantRowQ8 = quantRowQ8Ref
	dotQ4K = func(w *byte, xq *int8, xd *float32, bsum8 *int16, nb int) float32 {
		return dotQ4KRef(unsafe.Slice(w, nb*144), unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bsum8, nb*8), nb)
	}
	dotQ6K = func(w *byte, xq *int8, xd *float32, bsums *int16, nb int) float32 {
		return dotQ6KRef(unsafe.Slice(w, nb*210), unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bsums, nb*16), nb)
	}
	checkMatMulQuant(t)
}

func checkMatMulQuant(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pool := NewPool(3)
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		for _, sh := range [][2]int{{1, 256}, {7, 512}, {13, 256}, {35, 768}, {6, 4096}, {141, 256}, {9, 96}, {5, 320}} {
			n, k := sh[0], sh[1]
			if k%256 != 0 && (dt == tensor.Q4_K || dt == tensor.Q6_K) {
				continue // 3 and 10 blocks of 32 (no pairs / quads) only for Q8_0/Q4_0
			}
			w := randQuant(t, rng, dt, n, k)
			wf, _ := w.Float32()
			ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 33}
			if k == 4096 {
				ms = []int{1, 45}
			}
			for _, m := range ms {
				x := qRandVec(rng, m*k, 1)
				out := make([]float32, m*n)
				if err := pool.MatMul(out, x, w, m); err != nil {
					t.Fatal(err)
				}
				// float64 of dequant(w) · dequant(quant(x))
				xq := make([]float32, m*k)
				if dt == tensor.Q8_0 || dt == tensor.Q4_0 {
					a := getQ8Acts(m, k, false)
					a.quantize(Serial, x, false)
					for i := range xq {
						xq[i] = float32(a.qs[i]) * a.d[i/32]
					}
				} else {
					a := getQ8KActs(m, k)
					a.quantize(Serial, x)
					for i := range xq {
						xq[i] = float32(a.qs[i]) * a.d[i/256]
					}
				}
				for i := 0; i < m; i++ {
					for r := 0; r < n; r++ {
						var ex, mag float64
						for j := 0; j < k; j++ {
							p := float64(wf[r*k+j]) * float64(xq[i*k+j])
							ex += p
							mag += math.Abs(p)
						}
						if d := math.Abs(float64(out[i*n+r]) - ex); d > 2e-5*mag+1e-5 {
							t.Fatalf("%s n=%d k=%d m=%d out[%d,%d] = %g, want %g (mag %g)", dt, n, k, m, i, r, out[i*n+r], ex, mag)
						}
					}
				}
			}
		}
	}
}

func TestMatMulQuantReferenceSwitch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	w := randQuant(t, rng, tensor.Q8_0, 3, 64)
	x := qRandVec(rng, 64, 1)
	Reference = true
	defer func() { Reference = false }()
	out := make([]float32, 3)
	if err := MatMul(out, x, w, 1); err != nil {
		t.Fatal(err)
	}
	wf, _ := w.Float32()
	for r := 0; r < 3; r++ {
		if want := Dot(x, wf[r*64:]); out[r] != want {
			t.Fatalf("reference path: %g want %g", out[r], want)
		}
	}
}

var _ = fmt.Sprint
