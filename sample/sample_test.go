// Tests of the sampler: exact for greedy, penalties and logprobs; statistical (fixed seeds)
// for temperature, top-k, top-p and min-p.
package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func mustNew(t testing.TB, p Params) *Sampler {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGreedy(t *testing.T) {
	s := mustNew(t, Params{})
	for _, c := range []struct {
		l    []float32
		want int
	}{
		{[]float32{0, 3, 1, 3, -2}, 1},            // tie -> lowest id
		{[]float32{-5, -4, -9}, 1},                // all negative
		{[]float32{float32(math.NaN()), 1, 0}, 1}, // NaN never chosen
		{[]float32{7}, 0},
	} {
		r, err := s.Sample(c.l)
		if err != nil || r.ID != c.want {
			t.Errorf("%v: got %d (%v), want %d", c.l, r.ID, err, c.want)
		}
	}
}

func TestPenaltiesAndBias(t *testing.T) {
	// Repetition: token 0 (logit 2, seen in the prompt) becomes 1 < 1.5; token 2 (logit -1,
	// generated) becomes -2.
	s := mustNew(t, Params{RepetitionPenalty: 2})
	s.SetPrompt([]int{0})
	s.Accept(2)
	x := s.processed([]float32{2, 1.5, -1, -1.5})
	want := []float64{1, 1.5, -2, -1.5}
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("repetition: %v, want %v", x, want)
		}
	}
	// Presence/frequency: generated counts {1: 3}; prompt tokens are not penalized.
	s = mustNew(t, Params{PresencePenalty: 0.5, FrequencyPenalty: 0.25, LogitBias: map[int]float64{3: 10}})
	s.SetPrompt([]int{0})
	for range 3 {
		s.Accept(1)
	}
	x = s.processed([]float32{1, 1, 1, 1})
	want = []float64{1, 1 - 0.75 - 0.5, 1, 11}
	for i := range x {
		if math.Abs(x[i]-want[i]) > 1e-12 {
			t.Fatalf("presence/frequency/bias: %v, want %v", x, want)
		}
	}
	r, _ := s.Sample([]float32{1, 1, 1, 1})
	if r.ID != 3 {
		t.Fatalf("logit bias ignored: %d", r.ID)
	}
	if _, err := s.Sample([]float32{1, 2}); err == nil {
		t.Fatal("bias outside vocab accepted")
	}
}

func TestLogprobs(t *testing.T) {
	s := mustNew(t, Params{Logprobs: true, TopLogprobs: 2})
	r, _ := s.Sample([]float32{0, float32(math.Log(3)), 0})
	if r.ID != 1 || math.Abs(r.Logprob-math.Log(0.6)) > 1e-6 {
		t.Fatalf("got %+v", r)
	}
	if len(r.Top) != 2 || r.Top[0].ID != 1 || r.Top[1].ID != 0 || math.Abs(r.Top[1].Logprob-math.Log(0.2)) > 1e-6 {
		t.Fatalf("top: %+v", r.Top)
	}
}

// freqs samples n times and returns the observed frequency of each id.
func freqs(t *testing.T, p Params, logits []float32, n int) []float64 {
	s := mustNew(t, p)
	f := make([]float64, len(logits))
	for range n {
		r, err := s.Sample(logits)
		if err != nil {
			t.Fatal(err)
		}
		f[r.ID]++
	}
	for i := range f {
		f[i] /= float64(n)
	}
	return f
}

func checkFreqs(t *testing.T, what string, got, want []float64, n int) {
	t.Helper()
	for i := range want {
		// 5 standard deviations of a binomial proportion, plus exact zeros.
		sd := math.Sqrt(want[i]*(1-want[i])/float64(n)) * 5
		if (want[i] == 0 && got[i] != 0) || math.Abs(got[i]-want[i]) > sd+1e-12 {
			t.Fatalf("%s: frequencies %v, want %v", what, got, want)
		}
	}
}

func TestStatistical(t *testing.T) {
	probs := []float64{0.4, 0.3, 0.2, 0.08, 0.02}
	logits := make([]float32, len(probs))
	for i, p := range probs {
		logits[i] = float32(math.Log(p))
	}
	const n = 20000
	checkFreqs(t, "T=1", freqs(t, Params{Temperature: 1, Seed: 1}, logits, n), probs, n)
	// T=0.5 squares the probabilities.
	var z float64
	sq := make([]float64, len(probs))
	for i, p := range probs {
		sq[i] = p * p
		z += sq[i]
	}
	for i := range sq {
		sq[i] /= z
	}
	checkFreqs(t, "T=0.5", freqs(t, Params{Temperature: 0.5, Seed: 2}, logits, n), sq, n)
	checkFreqs(t, "top-k 2", freqs(t, Params{Temperature: 1, TopK: 2, Seed: 3}, logits, n), []float64{4.0 / 7, 3.0 / 7, 0, 0, 0}, n)
	// top-p 0.85: 0.4+0.3 = 0.7 < 0.85, +0.2 = 0.9 >= 0.85 -> keep 3.
	checkFreqs(t, "top-p 0.85", freqs(t, Params{Temperature: 1, TopP: 0.85, Seed: 4}, logits, n), []float64{4.0 / 9, 3.0 / 9, 2.0 / 9, 0, 0}, n)
	// min-p 0.45: keep p >= 0.18.
	checkFreqs(t, "min-p 0.45", freqs(t, Params{Temperature: 1, MinP: 0.45, Seed: 5}, logits, n), []float64{4.0 / 9, 3.0 / 9, 2.0 / 9, 0, 0}, n)
}

func TestSeedReproducible(t *testing.T) {
	logits := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}
	run := func(seed uint64) []int {
		s := mustNew(t, Params{Temperature: 1.3, TopP: 0.95, Seed: seed, PresencePenalty: 0.1})
		var ids []int
		for range 50 {
			r, _ := s.Sample(logits)
			ids = append(ids, r.ID)
		}
		return ids
	}
	a, b, c := run(42), run(42), run(43)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different output: %v vs %v", a, b)
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave identical 50-token output")
	}
}

func TestBadParams(t *testing.T) {
	for _, p := range []Params{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {MinP: -0.1}, {RepetitionPenalty: -2}} {
		if _, err := New(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if _, err := mustNew(t, Params{}).Sample(nil); err == nil {
		t.Error("empty logits accepted")
	}
}

// BenchmarkSample32k: one draw from a 32,000-token vocabulary, as the engine does per token.
func BenchmarkSample32k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"temperature", Params{Temperature: 1}},
		{"top-k40", Params{Temperature: 1, TopK: 40}},
		{"top-p0.9", Params{Temperature: 1, TopP: 0.9}},
		{"min-p0.05", Params{Temperature: 1, MinP: 0.05}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(c.p)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Sample(logits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
