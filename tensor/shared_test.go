// Tests against real llama.cpp output: quantizing rand3M's F32 weights here must give exactly
// the bytes llama-quantize wrote, and dequantizing them must come close to the originals.
package tensor_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tensor"
)

func openRand3M(t testing.TB, name string) *gguf.File {
	f, err := gguf.Open(fixture.Path(t, "models", "rand3M", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var rand3MQuant = []struct {
	file string
	dt   tensor.DType
	// maxRel bounds max|deq - x| / max|x| over each tensor (weights are N(0, 0.02)).
	maxRel float64
}{
	// F16: half an ulp, 2^-11 relative. Observed 0.00040.
	{"rand3M-f16.gguf", tensor.F16, 1.0 / 2048},
	// Q8_0: half a step (amax/254) plus the f16 rounding of d (127 * amax/127 * 2^-11). Obs. 0.0040.
	{"rand3M-q8_0.gguf", tensor.Q8_0, 1.0/254 + 1.0/2048},
	// Q6_K: half a step of 64 levels over ±amax (1/64) plus int8 scale rounding; obs. 0.0160.
	{"rand3M-q6_k.gguf", tensor.Q6_K, 0.02},
	// Q4_0: levels -8..7 of d = max/-8; clamping 8 -> 7 costs a whole step (amax/8), plus f16 d.
	// Observed 0.094.
	{"rand3M-q4_0.gguf", tensor.Q4_0, 1.0/8 + 1.0/2048},
	// Q4_K: half a step of 16 levels over [min, max] (<= 2*amax/30) plus 6-bit scale/min
	// rounding; observed 0.0738.
	{"rand3M-q4_k_m.gguf", tensor.Q4_K, 0.08},
}

func TestQuantizeMatchesLlamaCpp(t *testing.T) {
	src := openRand3M(t, "rand3M-f32.gguf")
	for _, c := range rand3MQuant {
		t.Run(c.dt.String(), func(t *testing.T) {
			q := openRand3M(t, c.file)
			checked := 0
			for i := range src.Tensors {
				st := &src.Tensors[i]
				qt, ok := q.Tensor(st.Name)
				if !ok {
					t.Fatalf("%s missing from %s", st.Name, c.file)
				}
				if qt.Type != c.dt {
					continue // norm vectors stay F32
				}
				conv, err := tensor.Convert(st, c.dt)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(conv.Data, qt.Data) {
					bb := c.dt.BlockBytes()
					for off := 0; off < len(qt.Data); off += bb {
						if !bytes.Equal(conv.Data[off:off+bb], qt.Data[off:off+bb]) {
							t.Fatalf("%s: block %d differs:\n got  %x\n want %x", st.Name, off/bb, conv.Data[off:off+bb], qt.Data[off:off+bb])
						}
					}
				}
				checked++
			}
			if checked != 30 {
				t.Errorf("checked %d tensors, want 30", checked)
			}
		})
	}
}

func TestDequantizeCloseToF32(t *testing.T) {
	src := openRand3M(t, "rand3M-f32.gguf")
	for _, c := range rand3MQuant {
		t.Run(c.dt.String(), func(t *testing.T) {
			q := openRand3M(t, c.file)
			worst := 0.0
			for i := range q.Tensors {
				qt := &q.Tensors[i]
				st, _ := src.Tensor(qt.Name)
				want, err := st.Float32()
				if err != nil {
					t.Fatal(err)
				}
				got, err := qt.Float32()
				if err != nil {
					t.Fatal(err)
				}
				var amax, emax float64
				for j := range want {
					amax = math.Max(amax, math.Abs(float64(want[j])))
					emax = math.Max(emax, math.Abs(float64(got[j]-want[j])))
				}
				rel := emax / amax
				worst = math.Max(worst, rel)
				if rel > c.maxRel {
					t.Errorf("%s: max error %.3g of max |x| %.3g (%.4f > %.4f)", qt.Name, emax, amax, rel, c.maxRel)
				}
			}
			t.Logf("%s: worst max-error / max|x| = %.5f (bound %.5f)", c.dt, worst, c.maxRel)
		})
	}
}

// TestF16FileRoundTrip: the F16 file's values widen to F32 and narrow back bit for bit.
func TestF16FileRoundTrip(t *testing.T) {
	f := openRand3M(t, "rand3M-f16.gguf")
	for i := range f.Tensors {
		tt := &f.Tensors[i]
		for _, via := range []tensor.DType{tensor.F32} {
			mid, err := tensor.Convert(tt, via)
			if err != nil {
				t.Fatal(err)
			}
			back, err := tensor.Convert(mid, tt.Type)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back.Data, tt.Data) {
				t.Fatalf("%s: %s -> %s -> %s changed the bytes", tt.Name, tt.Type, via, tt.Type)
			}
		}
	}
}

func BenchmarkDequantizeRow(b *testing.B) {
	src := openRand3M(b, "rand3M-f32.gguf")
	st, _ := src.Tensor("blk.0.ffn_gate.weight") // [768, 256]
	vals, _ := st.Float32()
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		ct, err := tensor.Convert(st, dt)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]float32, len(vals))
		b.Run(dt.String(), func(b *testing.B) {
			b.SetBytes(int64(len(vals) * 4))
			for b.Loop() {
				if err := tensor.DequantizeRow(dt, ct.Data, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
