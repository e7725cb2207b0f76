package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestExpf(t *testing.T) {
	var worst float64
	for x := float32(-87); x <= 10; x += 0.001 {
		want := math.Exp(float64(x))
		got := float64(expf(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Errorf("expf max relative error %g", worst)
	}
	if expf(-100) != 0 || expf(float32(math.Inf(-1))) != 0 {
		t.Errorf("expf underflow")
	}
	if expf(0) != 1 {
		t.Errorf("expf(0) = %v", expf(0))
	}
}

// refBatch runs the plain reference Attention for every token of a causal batch.
func refBatch(q, kc, vc []float32, n, start, heads, kvHeads, hd int) []float32 {
	out := make([]float32, n*heads*hd)
	scores := make([]float32, start+n)
	for i := 0; i < n; i++ {
		Attention(out[i*heads*hd:], q[i*heads*hd:], kc, vc, start+i+1, heads, kvHeads, hd, scores)
	}
	return out
}

func randSlice(r *rand.Rand, n int, amp float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (r.Float32()*2 - 1) * amp
	}
	return s
}

func TestFlashAttentionMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type shape struct{ n, start, heads, kvHeads, hd int }
	shapes := []shape{
		{1, 0, 1, 1, 8},       // first token
		{1, 200, 12, 12, 64},  // MHA decode
		{1, 700, 32, 4, 64},   // GQA decode, several blocks
		{1, 130, 8, 1, 32},    // MQA decode
		{1, 64, 6, 2, 48},     // block edge
		{17, 0, 4, 2, 16},     // prefill from empty
		{33, 40, 8, 2, 24},    // prefill after cached prefix
		{65, 3, 6, 1, 8},      // MQA prefill
		{5, 2000, 4, 4, 128},  // long context
		{3, 10, 40, 2, 16},    // group 20 > attnMaxGroup: sub-groups
		{9, 5, 3, 3, 5},       // odd head dim
		{128, 0, 14, 2, 64},   // qwen-like group 7
		{1, 4095, 32, 8, 128}, // long decode, llama-3 shape
	}
	pools := []*Pool{Serial, NewPool(2), NewPool(3)}
	for _, s := range shapes {
		for _, amp := range []float32{1, 8} { // amp 8: peaked softmax, running-max rescales
			nPos := s.start + s.n
			kvd, qd := s.kvHeads*s.hd, s.heads*s.hd
			q := randSlice(r, s.n*qd, amp)
			kc := randSlice(r, nPos*kvd, 1)
			vc := randSlice(r, nPos*kvd, 1)
			// Keys rising with position make later blocks raise the running maximum.
			for p := 0; p < nPos; p++ {
				for j := 0; j < kvd; j++ {
					kc[p*kvd+j] += float32(p) / float32(nPos) * 0.5
				}
			}
			want := refBatch(q, kc, vc, s.n, s.start, s.heads, s.kvHeads, s.hd)
			for pi, p := range append(pools, nil) {
				if p == nil { // the plain-Go path of the flash kernel
					p = Serial
					Reference = true
				}
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(math.NaN()) // every output must be written
				}
				p.Attention(got, q, kc, vc, s.n, s.start, s.heads, s.kvHeads, s.hd)
				Reference = false
				name := fmt.Sprintf("%+v amp %g pool %d", s, amp, pi)
				var worst float64
				for i := range want {
					d := math.Abs(float64(got[i] - want[i]))
					if !(d <= 2e-5+2e-5*math.Abs(float64(want[i]))) {
						t.Fatalf("%s: out[%d] = %v, reference %v", name, i, got[i], want[i])
					}
					worst = max(worst, d)
				}
			}
		}
	}
}

func TestAttentionGroupSingleHeadEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hd, nPos := 64, 300
	q := randSlice(r, hd, 2)
	k := randSlice(r, nPos*hd, 1)
	v := randSlice(r, nPos*hd, 1)
	want := make([]float32, hd)
	AttentionHead(want, q, k, v, nPos, hd, hd, make([]float32, nPos))
	got := make([]float32, hd)
	AttentionGroup(got, q, k, v, 1, nPos, hd, hd, make([]float32, AttentionScratch(1)))
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestPoolAttentionNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	heads, kvHeads, hd, nPos := 8, 2, 32, 100
	q := randSlice(r, heads*hd, 1)
	kc := randSlice(r, nPos*kvHeads*hd, 1)
	vc := randSlice(r, nPos*kvHeads*hd, 1)
	out := make([]float32, heads*hd)
	var ar AttentionRunner
	pool := NewPool(2)
	allocs := testing.AllocsPerRun(20, func() {
		ar.Run(Serial, out, q, kc, vc, 1, nPos-1, heads, kvHeads, hd)
		ar.Run(pool, out, q, kc, vc, 1, nPos-1, heads, kvHeads, hd)
	})
	if allocs != 0 {
		t.Errorf("serial decode attention allocates %v times", allocs)
	}
}

func benchAttention(b *testing.B, p *Pool, n, start, heads, kvHeads, hd int, flash bool) {
	r := rand.New(rand.NewPCG(7, 8))
	nPos := start + n
	q := randSlice(r, n*heads*hd, 1)
	kc := randSlice(r, nPos*kvHeads*hd, 1)
	vc := randSlice(r, nPos*kvHeads*hd, 1)
	out := make([]float32, n*heads*hd)
	scores := make([]float32, nPos)
	for b.Loop() {
		if flash {
			p.Attention(out, q, kc, vc, n, start, heads, kvHeads, hd)
		} else {
			for i := 0; i < n; i++ {
				Attention(out[i*heads*hd:], q[i*heads*hd:], kc, vc, start+i+1, heads, kvHeads, hd, scores)
			}
		}
	}
	// Multiply-adds of q·k and p·v over the causal triangle.
	flops := 0.0
	for i := 0; i < n; i++ {
		flops += 4 * float64(start+i+1) * float64(heads*hd)
	}
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// Decode at 512 cached positions, TinyLlama heads (32 q, 4 kv, 64 dims).
func BenchmarkAttentionDecodeRef(b *testing.B) { benchAttention(b, Serial, 1, 511, 32, 4, 64, false) }
func BenchmarkAttentionDecodeFlash(b *testing.B) {
	benchAttention(b, Serial, 1, 511, 32, 4, 64, true)
}
func BenchmarkAttentionDecodeFlashPool(b *testing.B) {
	benchAttention(b, Default, 1, 511, 32, 4, 64, true)
}

// Prefill of 512 tokens, stories110M heads (12 q = 12 kv, 64 dims).
func BenchmarkAttentionPrefillRef(b *testing.B) { benchAttention(b, Serial, 512, 0, 12, 12, 64, false) }
func BenchmarkAttentionPrefillFlash(b *testing.B) {
	benchAttention(b, Serial, 512, 0, 12, 12, 64, true)
}
func BenchmarkAttentionPrefillFlashPool(b *testing.B) {
	benchAttention(b, Default, 512, 0, 12, 12, 64, true)
}

// TestAttnPVColumnsExact: attnPV over all hd columns at once (its 64- and 32-column loops)
// gives bit for bit what its 8-column loop gives column block by column block: each output
// element is the same FMA chain over the rows whatever the loop.
func TestAttnPVColumnsExact(t *testing.T) {
	if !attnAsm {
		t.Skip("no attention assembly")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, hd := range []int{8, 16, 24, 32, 40, 64, 96, 104, 128, 160} {
		for _, nb := range []int{1, 3, 16, 37} {
			stride := hd + 8*r.IntN(3)
			v := make([]float32, nb*stride)
			p := make([]float32, nb)
			out := make([]float32, hd)
			for i := range v {
				v[i] = r.Float32()*2 - 1
			}
			for i := range p {
				p[i] = r.Float32()
			}
			for i := range out {
				out[i] = r.Float32()
			}
			want := slices.Clone(out)
			for c := 0; c < hd; c += 8 {
				attnPV(&want[c], &p[0], &v[c], stride, 8, nb)
			}
			attnPV(&out[0], &p[0], &v[0], stride, hd, nb)
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
					t.Fatalf("hd %d nb %d col %d: %v, 8-column loop %v", hd, nb, i, out[i], want[i])
				}
			}
		}
	}
}
