// This file implements rotary position embeddings (RoPE) in the two layouts llmcloud meets:
// "normal" (adjacent pairs (2i, 2i+1): GGUF llama/mistral, llama2.c) and "neox" (rotate-half
// pairs (i, i+d/2): GGUF qwen2/qwen3, Hugging Face checkpoints), plus Llama 3 frequency scaling.
package kernels

import (
	"fmt"
	"math"
)

// Rope rotates pairs of each head's first Dims values by pos * θ_i with
// θ_i = base^(-2i/Dims) / Factors[i] (Factors nil means all 1).
type Rope struct {
	Dims    int       // rotated dimensions per head (the head dim), even
	Base    float64   // frequency base ("rope theta")
	NeoX    bool      // rotate-half pairing instead of adjacent pairs
	Factors []float32 // optional per-frequency divisors, [Dims/2] (Llama 3 scaling, Phi-3's LongRoPE)
	Mscale  float32   // magnitude of cos and sin (LongRoPE's attention factor); 0 means 1
	// FreqScale multiplies every angle (linear RoPE scaling, ggml's freq_scale = 1/factor:
	// Gemma 3's global layers); 0 means 1.
	FreqScale float32
	Yarn      *Yarn // YaRN scaling (rope_yarn.go; set by SetYarn), nil if none

	yarn          []float32 // per pair, the weight of the original angle (YaRN's ramp)
	yarnFS, yarnM float32   // 1/factor and YaRN's magnitude 1 + 0.1·ln(factor)
}

// NewRope validates the parameters and returns a Rope.
func NewRope(dims int, base float64, neox bool, factors []float32) (*Rope, error) {
	if dims <= 0 || dims%2 != 0 {
		return nil, fmt.Errorf("rope: dimension count %d must be positive and even", dims)
	}
	if !(base > 0) {
		return nil, fmt.Errorf("rope: frequency base %v must be positive", base)
	}
	if factors != nil && len(factors) != dims/2 {
		return nil, fmt.Errorf("rope: %d frequency factors, want %d", len(factors), dims/2)
	}
	return &Rope{Dims: dims, Base: base, NeoX: neox, Factors: factors}, nil
}

// Table fills cs ([Dims]: cos, sin interleaved per pair) for position pos. Angles are built as
// ggml does: θ_0 = pos, θ_{i+1} = θ_i * base^(-2/Dims) in float32, divided by Factors[i]; cos
// and sin are then multiplied by Mscale (when set), as ggml's rope multiplies by its attn_factor.
// FreqScale (when set) multiplies the angle after the divisor, as ggml's freq_scale does.
// With YaRN (SetYarn) the angle is blended with its interpolation and the magnitude scaled.
func (r *Rope) Table(cs []float32, pos int) {
	scale := float32(math.Pow(r.Base, -2/float64(r.Dims)))
	theta := float32(pos)
	for i := 0; i < r.Dims/2; i++ {
		t := theta
		if r.Factors != nil {
			t = theta / r.Factors[i]
		}
		if r.FreqScale != 0 && r.FreqScale != 1 {
			t *= r.FreqScale
		}
		m := r.Mscale
		if r.yarn != nil {
			if m == 0 {
				m = 1
			}
			t = r.yarnFS*t*(1-r.yarn[i]) + t*r.yarn[i]
			m *= r.yarnM
		}
		s, c := math.Sincos(float64(t))
		cs[2*i], cs[2*i+1] = float32(c), float32(s)
		if m != 0 && m != 1 {
			cs[2*i], cs[2*i+1] = cs[2*i]*m, cs[2*i+1]*m
		}
		theta *= scale
	}
}

// Apply rotates x, which is [heads, headDim] (headDim >= Dims), using the table cs from Table.
func (r *Rope) Apply(x []float32, heads, headDim int, cs []float32) {
	half := r.Dims / 2
	for h := 0; h < heads; h++ {
		v := x[h*headDim : h*headDim+r.Dims]
		for i := 0; i < half; i++ {
			c, s := cs[2*i], cs[2*i+1]
			a, b := 2*i, 2*i+1
			if r.NeoX {
				a, b = i, i+half
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*c - x1*s
			v[b] = x0*s + x1*c
		}
	}
}

// RopeScaling holds the Llama 3 ("llama3" rope_type) frequency scaling parameters.
type RopeScaling struct {
	Factor               float64 // e.g. 32 (Llama 3.2) or 8 (Llama 3.1)
	LowFreqFactor        float64 // e.g. 1
	HighFreqFactor       float64 // e.g. 4
	OriginalMaxPositions int     // original_max_position_embeddings, e.g. 8192
}

// Llama3Factors returns the per-frequency divisors ([dims/2]) that Llama 3 scaling applies to
// the inverse frequencies base^(-2i/dims): 1 for short wavelengths, Factor for long ones, and
// a smooth blend in between (the values GGUF files store as rope_freqs.weight).
func Llama3Factors(dims int, base float64, s RopeScaling) ([]float32, error) {
	if s.Factor <= 0 || s.HighFreqFactor <= s.LowFreqFactor || s.LowFreqFactor <= 0 || s.OriginalMaxPositions <= 0 {
		return nil, fmt.Errorf("rope: invalid llama3 scaling %+v", s)
	}
	old := float64(s.OriginalMaxPositions)
	lowWave := old / s.LowFreqFactor
	highWave := old / s.HighFreqFactor
	f := make([]float32, dims/2)
	for i := range f {
		freq := 1 / math.Pow(base, float64(2*i)/float64(dims))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			f[i] = 1
		case wave > lowWave:
			f[i] = float32(s.Factor)
		default:
			smooth := (old/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			f[i] = float32(1 / ((1-smooth)/s.Factor + smooth))
		}
	}
	return f, nil
}
