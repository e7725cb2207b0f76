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
	if len(m) != 2 || m["matmul/q4_0"].frac != 0.1 || m["attention"].frac != 0.25 {
		t.Fatalf("parsed %v", m)
	}
	for _, bad := range []string{"matmul/q4_0", "=0.1", "attention=0", "attention=1.5", "attention=x", "attention=0.1,", "matmul/q5_0=0.1"} {
		if _, err := parseSlowdown(bad); err == nil || !strings.Contains(err.Error(), "injectSlowdown") {
			t.Errorf("%q: error %v, want one naming injectSlowdown", bad, err)
		}
	}
}

// TestSlowdownRepeats checks that exactly the asked fraction of calls repeat, evenly spread,
// and that a repeated MatMul still gives the same result.
func TestSlowdownRepeats(t *testing.T) {
	defer setSlowdowns(nil)
	m, err := parseSlowdown("matmul/q8_0=0.1,rmsnorm=0.3")
	if err != nil {
		t.Fatal(err)
	}
	setSlowdowns(m)
	n := 0
	for i := 1; i <= 1000; i++ {
		if slowMatMul[tensor.Q8_0].repeat() {
			n++
			if i%10 != 0 {
				t.Fatalf("call %d repeated; want every tenth", i)
			}
		}
	}
	if n != 100 {
		t.Fatalf("%d of 1000 calls repeated, want 100", n)
	}
	if slowMatMul[tensor.F16].repeat() || slowAttention.repeat() {
		t.Fatal("a kernel without a slowdown repeated")
	}
	n = 0
	for range 1000 {
		if slowRMSNorm.repeat() {
			n++
		}
	}
	if n != 300 {
		t.Fatalf("rmsnorm: %d of 1000 calls repeated, want 300", n)
	}
	if got := matmulKernel(tensor.Q8_0.String()); got != "matmul/q8_0" {
		t.Fatalf("matmulKernel = %q", got)
	}
	const rows, k = 8, 64
	src := make([]float32, rows*k)
	for i := range src {
		src[i] = float32(i%7) - 3
	}
	rb, _ := tensor.Q8_0.RowBytes(k)
	w := &tensor.Tensor{Name: "w", Type: tensor.Q8_0, Shape: []int{rows, k}, Data: make([]byte, rows*rb)}
	for r := range rows {
		if err := tensor.QuantizeRow(tensor.Q8_0, src[r*k:(r+1)*k], w.Data[r*rb:(r+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	x := src[:k]
	want := make([]float32, rows)
	slowOn = false
	if err := MatMul(want, x, w, 1); err != nil {
		t.Fatal(err)
	}
	slowOn = true
	slowMatMul[tensor.Q8_0].calls.Store(0)
	for range 20 { // two of them repeat
		got := make([]float32, rows)
		if err := MatMul(got, x, w, 1); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("out[%d] = %v with the slowdown, %v without", i, got[i], want[i])
			}
		}
	}
}
