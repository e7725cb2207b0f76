package quant

import (
	"math"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// problem is a random weight matrix and correlated activations with uneven channel
// magnitudes (a few outlier channels), as transformer activations have.
type problem struct {
	w       []float32 // [rows, k]
	x       []float32 // [n, k]
	rows, k int
	n       int
	imp     []float32 // per-column mean x²
	abs     []float32 // per-column mean |x|
	h       []float64 // X^T X
}

func newProblem(seed int64, rows, k, n int) *problem {
	rng := rand.New(rand.NewSource(seed))
	p := &problem{rows: rows, k: k, n: n, w: make([]float32, rows*k), x: make([]float32, n*k)}
	for i := range p.w {
		p.w[i] = float32(rng.NormFloat64()) * 0.05
	}
	scale := make([]float64, k)
	for j := range scale {
		scale[j] = math.Exp(rng.NormFloat64() * 0.8)
		if rng.Intn(32) == 0 {
			scale[j] *= 8
		}
	}
	const f = 8 // latent factors: columns are correlated
	lat := make([]float64, f*k)
	for i := range lat {
		lat[i] = rng.NormFloat64()
	}
	for r := 0; r < n; r++ {
		z := make([]float64, f)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		for j := 0; j < k; j++ {
			v := 0.5 * rng.NormFloat64()
			for i := 0; i < f; i++ {
				v += z[i] * lat[i*k+j] * 0.4
			}
			p.x[r*k+j] = float32(v * scale[j])
		}
	}
	p.imp, p.abs, p.h = make([]float32, k), make([]float32, k), make([]float64, k*k)
	for r := 0; r < n; r++ {
		row := p.x[r*k : r*k+k]
		for i, a := range row {
			p.imp[i] += a * a / float32(n)
			p.abs[i] += float32(math.Abs(float64(a))) / float32(n)
			for j, b := range row {
				p.h[i*k+j] += float64(a) * float64(b)
			}
		}
	}
	return p
}

func (p *problem) errOf(t *testing.T, dt tensor.DType, data []byte) float64 {
	t.Helper()
	q, err := Dequantize(dt, data, p.rows, p.k)
	if err != nil {
		t.Fatal(err)
	}
	e, err := outputErr(p.w, q, p.x, p.rows, p.k, p.n)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var testTypes = []tensor.DType{tensor.Q4_0, tensor.Q4_K, tensor.Q6_K, tensor.Q8_0}

func TestRTNMatchesReference(t *testing.T) {
	p := newProblem(1, 8, 256, 4)
	for _, dt := range testTypes {
		data, err := RTN(dt, p.w, p.rows, p.k)
		if err != nil {
			t.Fatal(err)
		}
		conv, err := tensor.Convert(F32Tensor("w", p.w, p.rows, p.k), dt)
		if err != nil {
			t.Fatal(err)
		}
		if string(conv.Data) != string(data) {
			t.Errorf("%s: RTN differs from tensor.Convert", dt)
		}
	}
}

// TestMethodsBeatRTN: each calibrated method's output error on the calibration activations is
// clearly below round-to-nearest's (a method that degrades to RTN fails).
func TestMethodsBeatRTN(t *testing.T) {
	p := newProblem(2, 32, 512, 384)
	for _, dt := range testTypes {
		rtnData, err := RTN(dt, p.w, p.rows, p.k)
		if err != nil {
			t.Fatal(err)
		}
		rtn := p.errOf(t, dt, rtnData)
		im, err := Imatrix(dt, p.w, p.rows, p.k, p.imp)
		if err != nil {
			t.Fatal(err)
		}
		imErr := p.errOf(t, dt, im)
		gq, err := GPTQ(dt, p.w, p.rows, p.k, p.h, GPTQOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gErr := p.errOf(t, dt, gq)
		aw, err := AWQSearch([][]float32{p.w}, []int{p.rows}, []tensor.DType{dt}, p.k, p.abs, p.x, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: output error RTN %.4g, imatrix %.4g (%.2f), gptq %.4g (%.2f), awq %.4g (%.2f, alpha %.2f)",
			dt, rtn, imErr, imErr/rtn, gErr, gErr/rtn, aw.Err, aw.Err/rtn, aw.Alpha)
		if math.Abs(aw.ErrRTN-rtn) > 1e-6*rtn {
			t.Errorf("%s: awq's alpha=0 error %g is not RTN's %g", dt, aw.ErrRTN, rtn)
		}
		for _, c := range []struct {
			name string
			e    float64
			max  float64
		}{{"imatrix", imErr, 0.7}, {"gptq", gErr, 0.5}, {"awq", aw.Err, 0.7}} {
			if c.e > c.max*rtn {
				t.Errorf("%s %s: output error %.4g is not below %.2f x RTN's %.4g", dt, c.name, c.e, c.max, rtn)
			}
		}
	}
}

// TestGridRoundTrip: the grid read back from an encoded block dequantizes exactly as the
// reference decoder does.
func TestGridRoundTrip(t *testing.T) {
	p := newProblem(3, 4, 256, 8)
	for _, dt := range testTypes {
		data, err := Imatrix(dt, p.w, p.rows, p.k, p.imp)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := Dequantize(dt, data, p.rows, p.k)
		f, _ := formatOf(dt)
		rb := p.k / f.unit * f.bytes
		ng := f.unit / f.group
		d, m := make([]float32, ng), make([]float32, ng)
		L := make([]int, f.unit)
		for r := 0; r < p.rows; r++ {
			for u := 0; u < p.k/f.unit; u++ {
				blk := data[r*rb+u*f.bytes : r*rb+(u+1)*f.bytes]
				f.parseGrid(blk, d, m)
				for i := 0; i < f.unit; i++ {
					x := ref[r*p.k+u*f.unit+i]
					g := i / f.group
					L[i] = f.nearest(x, d[g], m[g])
					if got := d[g]*float32(L[i]) - m[g]; math.Abs(float64(got-x)) > 1e-6*math.Max(1, math.Abs(float64(x))) {
						t.Fatalf("%s: row %d elem %d: grid gives %g, decoder %g", dt, r, u*f.unit+i, got, x)
					}
				}
				cp := append([]byte(nil), blk...)
				f.setQuants(cp, L)
				if string(cp) != string(blk) {
					t.Fatalf("%s: setQuants of the decoded integers changes the block", dt)
				}
			}
		}
	}
}

func TestInvUpperCholesky(t *testing.T) {
	p := newProblem(4, 1, 32, 64)
	n := p.k
	h := append([]float64(nil), p.h...)
	for i := 0; i < n; i++ {
		h[i*n+i] += 0.1
	}
	u, ok := invUpperCholesky(h, n)
	if !ok {
		t.Fatal("not positive definite")
	}
	// (U^T U) H = I
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				var hinv float64
				for l := 0; l < n; l++ {
					hinv += u[l*n+i] * u[l*n+k]
				}
				s += hinv * h[k*n+j]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(s-want) > 1e-6 {
				t.Fatalf("(U^T U H)[%d,%d] = %g", i, j, s)
			}
		}
	}
}
