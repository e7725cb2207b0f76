// Tests of every kernel against straightforward float64 implementations.
package kernels

import (
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func randVec(r *rand.Rand, n int, s float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * s)
	}
	return v
}

func f32Tensor(name string, shape []int, v []float32) *tensor.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
}

func TestMatMulAllTypes(t *testing.T) {
	defer func() { Reference = false }()
	r := rand.New(rand.NewSource(1))
	const m, n, k = 5, 37, 512
	x := randVec(r, m*k, 1)
	wf := randVec(r, n*k, 0.05)
	w32 := f32Tensor("w", []int{n, k}, wf)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		w, err := tensor.Convert(w32, dt)
		if err != nil {
			t.Fatal(err)
		}
		// The float64 reference uses the dequantized weights: the kernel must compute exactly
		// that product, up to f32 summation error.
		deq, err := w.Float32()
		if err != nil {
			t.Fatal(err)
		}
		// The fast quantized path quantizes the activations too (as llama.cpp does), so it is
		// checked against that math in quant_test.go; here the reference path runs.
		Reference = dt.Quantized()
		for _, p := range []*Pool{Serial, NewPool(3)} {
			out := make([]float32, m*n)
			if err := p.MatMul(out, x, w, m); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var s float64
					for l := 0; l < k; l++ {
						s += float64(x[i*k+l]) * float64(deq[j*k+l])
					}
					if d := math.Abs(s - float64(out[i*n+j])); d > 1e-5*(1+math.Abs(s)) {
						t.Fatalf("%s workers=%d out[%d,%d] = %v, want %v", dt, p.Workers(), i, j, out[i*n+j], s)
					}
				}
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	w := f32Tensor("blk.0.ffn_up.weight", []int{4, 8}, make([]float32, 32))
	if err := MatMul(make([]float32, 4), make([]float32, 7), w, 1); err == nil {
		t.Fatal("short x accepted")
	}
	w.Data = w.Data[:30]
	if err := MatMul(make([]float32, 4), make([]float32, 8), w, 1); err == nil {
		t.Fatal("short weight data accepted")
	}
	// Unaligned F32 data takes the dequantizing path and must give the same answer.
	r := rand.New(rand.NewSource(2))
	v := randVec(r, 32, 1)
	x := randVec(r, 8, 1)
	a := f32Tensor("a", []int{4, 8}, v)
	raw := make([]byte, len(a.Data)+1)
	copy(raw[1:], a.Data)
	b := &tensor.Tensor{Name: "b", Type: tensor.F32, Shape: []int{4, 8}, Data: raw[1:]}
	oa, ob := make([]float32, 4), make([]float32, 4)
	if err := MatMul(oa, x, a, 1); err != nil {
		t.Fatal(err)
	}
	if err := MatMul(ob, x, b, 1); err != nil {
		t.Fatal(err)
	}
	for i := range oa {
		if oa[i] != ob[i] {
			t.Fatalf("aligned %v vs unaligned %v", oa, ob)
		}
	}
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	x := randVec(r, 100, 3)
	w := randVec(r, 100, 1)
	out := make([]float32, 100)
	RMSNorm(out, x, w, 1e-5)
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	sc := 1 / math.Sqrt(ss/100+1e-5)
	for i := range x {
		want := float64(x[i]) * sc * float64(w[i])
		if math.Abs(want-float64(out[i])) > 1e-6*(1+math.Abs(want)) {
			t.Fatalf("out[%d] = %v want %v", i, out[i], want)
		}
	}
}

func TestSoftmaxSwiGLU(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	x := randVec(r, 50, 10)
	x[7] = 80 // large values must not overflow
	ref := make([]float64, len(x))
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for i, v := range x {
		ref[i] = math.Exp(float64(v) - mx)
		s += ref[i]
	}
	Softmax(x)
	for i := range x {
		if math.Abs(ref[i]/s-float64(x[i])) > 1e-6 {
			t.Fatalf("softmax[%d] = %v want %v", i, x[i], ref[i]/s)
		}
	}
	a, b := randVec(r, 64, 3), randVec(r, 64, 1)
	out := make([]float32, 64)
	SwiGLU(out, a, b)
	for i := range a {
		av := float64(a[i])
		want := av / (1 + math.Exp(-av)) * float64(b[i])
		if math.Abs(want-float64(out[i])) > 1e-6*(1+math.Abs(want)) {
			t.Fatalf("swiglu[%d] = %v want %v", i, out[i], want)
		}
	}
}

// ropeRef rotates one head in float64, pairing dims as the mode says.
func ropeRef(x []float64, pos int, base float64, neox bool, factors []float32) {
	d := len(x)
	for i := 0; i < d/2; i++ {
		th := float64(pos) * math.Pow(base, -2*float64(i)/float64(d))
		if factors != nil {
			th /= float64(factors[i])
		}
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+d/2
		}
		x0, x1 := x[a], x[b]
		x[a] = x0*math.Cos(th) - x1*math.Sin(th)
		x[b] = x0*math.Sin(th) + x1*math.Cos(th)
	}
}

func TestRope(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	const heads, hd = 3, 64
	fac, err := Llama3Factors(hd, 500000, RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192})
	if err != nil {
		t.Fatal(err)
	}
	for _, neox := range []bool{false, true} {
		for _, f := range [][]float32{nil, fac} {
			rp, err := NewRope(hd, 500000, neox, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, pos := range []int{0, 1, 17, 300} {
				x := randVec(r, heads*hd, 1)
				cs := make([]float32, hd)
				rp.Table(cs, pos)
				want := make([]float64, len(x))
				for i, v := range x {
					want[i] = float64(v)
				}
				rp.Apply(x, heads, hd, cs)
				for h := 0; h < heads; h++ {
					ropeRef(want[h*hd:(h+1)*hd], pos, 500000, neox, f)
				}
				for i := range x {
					if math.Abs(want[i]-float64(x[i])) > 1e-4 {
						t.Fatalf("neox=%v scaled=%v pos=%d x[%d] = %v want %v", neox, f != nil, pos, i, x[i], want[i])
					}
				}
			}
		}
	}
	// Llama 3 factors: highest frequency unscaled, lowest divided by the full factor.
	if fac[0] != 1 || fac[len(fac)-1] != 32 {
		t.Fatalf("llama3 factors %v", fac)
	}
	if _, err := NewRope(7, 1e4, false, nil); err == nil {
		t.Fatal("odd rope dims accepted")
	}
}

func TestAttentionGQA(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, c := range []struct{ heads, kvHeads int }{{4, 4}, {8, 2}, {6, 1}} {
		const hd, nPos = 16, 9
		kvDim := c.kvHeads * hd
		q := randVec(r, c.heads*hd, 1)
		k := randVec(r, nPos*kvDim, 1)
		v := randVec(r, nPos*kvDim, 1)
		out := make([]float32, c.heads*hd)
		Attention(out, q, k, v, nPos, c.heads, c.kvHeads, hd, make([]float32, nPos))
		for h := 0; h < c.heads; h++ {
			kh := h * c.kvHeads / c.heads
			sc := make([]float64, nPos)
			mx := math.Inf(-1)
			for p := 0; p < nPos; p++ {
				for i := 0; i < hd; i++ {
					sc[p] += float64(q[h*hd+i]) * float64(k[p*kvDim+kh*hd+i])
				}
				sc[p] /= math.Sqrt(hd)
				mx = math.Max(mx, sc[p])
			}
			var sum float64
			for p := range sc {
				sc[p] = math.Exp(sc[p] - mx)
				sum += sc[p]
			}
			for i := 0; i < hd; i++ {
				var o float64
				for p := 0; p < nPos; p++ {
					o += sc[p] / sum * float64(v[p*kvDim+kh*hd+i])
				}
				if math.Abs(o-float64(out[h*hd+i])) > 1e-5 {
					t.Fatalf("heads=%d kv=%d out[%d,%d] = %v want %v", c.heads, c.kvHeads, h, i, out[h*hd+i], o)
				}
			}
		}
	}
}

func TestPoolCoversRange(t *testing.T) {
	p := NewPool(4)
	for _, n := range []int{1, 3, 4, 5, 100, 1001} {
		seen := make([]int32, n)
		p.For(n, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("n=%d item %d visited %d times", n, i, s)
			}
		}
	}
}

func BenchmarkMatMulQ8_0(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	const n, k = 768, 256
	w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.05)), tensor.Q8_0)
	x := randVec(r, k, 1)
	out := make([]float32, n)
	for b.Loop() {
		MatMul(out, x, w, 1)
	}
}

// TestISA: ISA names what the package chose (the switches it reads), and AMX entries go with
// the AMX switch.
func TestISA(t *testing.T) {
	got := ISA()
	if got == "" || strings.Contains(got, "amx-int8") != amxOn() || strings.Contains(got, "avx512-vnni") != quantVNNI {
		t.Fatalf("ISA() = %q (amx %v, vnni %v)", got, amxOn(), quantVNNI)
	}
	old := useAMX
	useAMX = false
	defer func() { useAMX = old }()
	if strings.Contains(ISA(), "amx-int8") {
		t.Errorf("ISA() = %q with the AMX tiles off", ISA())
	}
}
