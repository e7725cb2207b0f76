package kernels

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func TestParseSlowdown(t *testing.T) {
	m, err := parseSlowdown("matmul/q4_0=0.1, attention=0.25")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["matmul/q4_0"] != 0.1 || m["attention"] != 0.25 {
		t.Fatalf("parsed %v", m)
	}
	for _, bad := range []string{"matmul/q4_0", "=0.1", "attention=0", "attention=1.5", "attention=x", "attention=0.1,", "matmul/q5_0=0.1"} {
		if _, err := parseSlowdown(bad); err == nil || !strings.Contains(err.Error(), "injectSlowdown") {
			t.Errorf("%q: error %v, want one naming injectSlowdown", bad, err)
		}
	}
}

// TestSlowdownSameResults checks the parts' sizes and that MatMul, Attention and RMSNorm give
// the same results with a slowdown injected as without.
func TestSlowdownSameResults(t *testing.T) {
	defer setSlowdowns(nil)
	m, err := parseSlowdown("matmul/q8_0=0.1,attention=0.25,rmsnorm=0.3")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]float64{{0.1, 1024, 103}, {0.1, 10, 1}, {0.25, 7, 2}, {1, 5, 5}} {
		if got := part(c[0], int(c[1])); got != int(c[2]) {
			t.Errorf("part(%v, %v) = %d, want %v", c[0], c[1], got, c[2])
		}
	}
	const rows, k = 40, 64
	src := make([]float32, rows*k)
	for i := range src {
		src[i] = float32(i%7) - 3 + float32(i%5)/8
	}
	rb, _ := tensor.Q8_0.RowBytes(k)
	w := &tensor.Tensor{Name: "w", Type: tensor.Q8_0, Shape: []int{rows, k}, Data: make([]byte, rows*rb)}
	for r := range rows {
		if err := tensor.QuantizeRow(tensor.Q8_0, src[r*k:(r+1)*k], w.Data[r*rb:(r+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	const mm = 3
	x := src[:mm*k]
	run := func() (mat, att, norm []float32) {
		mat = make([]float32, mm*rows)
		if err := MatMul(mat, x, w, mm); err != nil {
			t.Fatal(err)
		}
		att = make([]float32, 4*16)
		Attention(att, src[:4*16], src[:rows*2*16], src[rows*2*16:2*rows*2*16], rows, 4, 2, 16, make([]float32, rows))
		norm = make([]float32, k)
		RMSNorm(norm, src[:k], src[k:2*k], 1e-5)
		return
	}
	setSlowdowns(nil)
	m0, a0, n0 := run()
	setSlowdowns(m)
	if !slowOn || slowMatMul[tensor.Q8_0] != 0.1 || slowMatMul[tensor.F16] != 0 || slowAttention != 0.25 {
		t.Fatalf("installed: on %v, q8_0 %v, f16 %v, attention %v", slowOn, slowMatMul[tensor.Q8_0], slowMatMul[tensor.F16], slowAttention)
	}
	m1, a1, n1 := run()
	for _, c := range []struct {
		name string
		a, b []float32
	}{{"matmul", m0, m1}, {"attention", a0, a1}, {"rmsnorm", n0, n1}} {
		for i := range c.a {
			if c.a[i] != c.b[i] {
				t.Fatalf("%s: out[%d] = %v with the slowdown, %v without", c.name, i, c.b[i], c.a[i])
			}
		}
	}
}
