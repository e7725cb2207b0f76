package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulEach checks that MatMulEach gives, bit for bit, what MatMul gives on each weight
// with its own input (quantized types of several k, and a float weight that makes it fall
// back to MatMul by MatMul), and that bad calls are refused with an error.
func TestMatMulEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	quant := []*tensor.Tensor{}
	for i, c := range []struct {
		dt tensor.DType
		k  int
	}{{tensor.Q8_0, 768}, {tensor.Q8_0, 2048}, {tensor.Q4_0, 512}, {tensor.Q4_K, 768}, {tensor.Q6_K, 512}, {tensor.Q8_0, 96}} {
		quant = append(quant, randQuant(t, rng, c.dt, 37+8*i, c.k))
	}
	pool := NewPool(2)
	for _, ws := range [][]*tensor.Tensor{quant, quant[:2], quant[3:5], append(quant[:1:1], randQuant(t, rng, tensor.F32, 40, 64))} {
		xs, outs := make([][]float32, len(ws)), make([][]float32, len(ws))
		for i, w := range ws {
			xs[i], outs[i] = qRandVec(rng, w.Shape[1], 1), make([]float32, w.Shape[0])
		}
		if err := pool.MatMulEach(outs, xs, ws); err != nil {
			t.Fatal(err)
		}
		for i, w := range ws {
			want := make([]float32, w.Shape[0])
			if err := pool.MatMul(want, xs[i], w, 1); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if outs[i][j] != want[j] {
					t.Fatalf("weight %d (%s k=%d) out[%d] = %g, MatMul gives %g", i, w.Type, w.Shape[1], j, outs[i][j], want[j])
				}
			}
		}
	}
	w := quant[0]
	if err := pool.MatMulEach([][]float32{make([]float32, w.Shape[0])}, [][]float32{make([]float32, 10)}, quant[:1]); err == nil {
		t.Error("a short input accepted")
	}
	if err := pool.MatMulEach(nil, [][]float32{nil}, quant[:1]); err == nil {
		t.Error("missing outputs accepted")
	}
}

// TestMatMulEachStreams checks that the four-stream split of MatMulEach (quant_each_streams.go)
// gives, bit for bit, the 64-row chunks' results on a mixture of experts' down shapes (two
// experts' [1024 768] and a shared expert's [1024 2048]) and on shares with rest rows.
func TestMatMulEachStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	pool := NewPool(2)
	for _, shape := range [][][2]int{{{1024, 768}, {1024, 768}, {1024, 2048}}, {{37, 64}, {5, 128}, {203, 768}}} {
		var ws []*tensor.Tensor
		var xs, outs, want [][]float32
		for _, s := range shape {
			ws = append(ws, randQuant(t, rng, tensor.Q8_0, s[0], s[1]))
			xs = append(xs, qRandVec(rng, s[1], 1))
			outs, want = append(outs, make([]float32, s[0])), append(want, make([]float32, s[0]))
		}
		for r := 0; r < 3; r++ {
			if err := pool.MatMulEach(outs, xs, ws); err != nil {
				t.Fatal(err)
			}
			useEachStreams = false
			err := pool.MatMulEach(want, xs, ws)
			useEachStreams = true
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				for j := range want[i] {
					if outs[i][j] != want[i][j] {
						t.Fatalf("weight %d [%d %d] out[%d] = %g, the 64-row chunks give %g", i, ws[i].Shape[0], ws[i].Shape[1], j, outs[i][j], want[i][j])
					}
				}
			}
		}
	}
}
