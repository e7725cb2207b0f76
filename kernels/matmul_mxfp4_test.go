package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// e2m1 decodes a 4-bit E2M1 float from its bits (OCP MX spec): sign, 2 exponent bits (bias
// 1), 1 mantissa bit; exponent 0 is subnormal (0 or 0.5).
func e2m1(q byte) float64 {
	sign := 1.0
	if q&8 != 0 {
		sign = -1
	}
	e, m := int(q>>1&3), float64(q&1)
	if e == 0 {
		return sign * m * 0.5
	}
	return sign * (1 + m/2) * math.Ldexp(1, e-1)
}

// randMXFP4 is a random [n, k] MXFP4 weight: scales 2^(e-127) for e in 120..130, random nibbles.
func randMXFP4(rng *rand.Rand, n, k int) *tensor.Tensor {
	data := make([]byte, n*k/32*17)
	for b := 0; b < len(data)/17; b++ {
		data[b*17] = byte(120 + rng.IntN(11))
		for j := 1; j < 17; j++ {
			data[b*17+j] = byte(rng.IntN(256))
		}
	}
	return &tensor.Tensor{Name: "w", Type: tensor.MXFP4, Shape: []int{n, k}, Data: data}
}

// TestMXFP4DequantPlain: tensor's decoder against the spec's E2M1 x E8M0, every nibble and
// scale byte (255 included; values beyond float32's range are ±Inf).
func TestMXFP4DequantPlain(t *testing.T) {
	for e := 0; e < 256; e++ {
		blk := make([]byte, 17)
		blk[0] = byte(e)
		for j := 0; j < 16; j++ {
			blk[1+j] = byte(j) | byte(15-j)<<4
		}
		got := make([]float32, 32)
		if err := tensor.DequantizeRow(tensor.MXFP4, blk, got); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 32; j++ {
			q := byte(j)
			if j >= 16 {
				q = byte(15 - (j - 16))
			}
			want := float32(e2m1(q) * math.Ldexp(1, e-127)) // beyond float32's range: ±Inf
			if got[j] != want {
				t.Fatalf("scale byte %d, element %d (nibble %d): %v, spec %v", e, j, q, got[j], want)
			}
		}
	}
	if tensor.MXFP4.GGMLType() != 39 || tensor.MXFP4.BlockBytes() != 17 || tensor.MXFP4.BlockElems() != 32 {
		t.Fatalf("MXFP4: ggml type %d, %d bytes per %d", tensor.MXFP4.GGMLType(), tensor.MXFP4.BlockBytes(), tensor.MXFP4.BlockElems())
	}
	if dt, ok := tensor.FromGGML(39); !ok || dt != tensor.MXFP4 {
		t.Fatal("ggml type 39 is not MXFP4")
	}
}

// TestMXFP4MatMulMatchesPlain: the kernel (one row and several; a pool of workers) against
// float64 dots over the spec-decoded weights.
func TestMXFP4MatMulMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := NewPool(3)
	for _, s := range []struct{ m, n, k int }{{1, 7, 32}, {1, 64, 256}, {3, 33, 96}, {9, 40, 2880 / 10}} {
		w := randMXFP4(rng, s.n, s.k)
		x := make([]float32, s.m*s.k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, s.m*s.n)
		if err := pool.MatMul(out, x, w, s.m); err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i := 0; i < s.m; i++ {
			for r := 0; r < s.n; r++ {
				var want, mag float64
				for c := 0; c < s.k; c++ {
					blk := w.Data[(r*s.k+c)/32*17:]
					j := c % 32
					q := blk[1+j%16]
					if j >= 16 {
						q >>= 4
					}
					v := e2m1(q&0xf) * math.Ldexp(1, int(blk[0])-127)
					want += v * float64(x[i*s.k+c])
					mag += math.Abs(v * float64(x[i*s.k+c]))
				}
				d := math.Abs(float64(out[i*s.n+r]) - want)
				worst = math.Max(worst, d/mag)
				if d > 1e-5*mag {
					t.Fatalf("%+v: out[%d,%d] = %v, plain %v", s, i, r, out[i*s.n+r], want)
				}
			}
		}
		t.Logf("m %d, n %d, k %d: max |kernel - plain| / Σ|terms| = %.2g", s.m, s.n, s.k, worst)
	}
}
