package spec

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func headTestModel(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.OpenGGUF(fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// headRandom is a head of k heads for m with random weights, saved and loaded back.
func headRandom(t *testing.T, m *model.Model, k int, tokenInput bool) *Head {
	t.Helper()
	h := NewHead(m.Config.Dim, m.Config.Vocab, k, "stories260K")
	if tokenInput {
		h.EnableTokenInput()
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for j := range k {
		for i := range h.W[j] {
			h.W[j][i] = float32(rng.NormFloat64() * 0.3)
			if tokenInput {
				h.U[j][i] = float32(rng.NormFloat64() * 0.3)
			}
		}
		for i := range h.B[j] {
			h.B[j][i] = float32(rng.NormFloat64() * 0.3)
		}
	}
	path := filepath.Join(t.TempDir(), "head.gguf")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadHead(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestHeadProposerDrafts feeds the proposer the target's real hidden state (Cache.Hidden
// after a prompt) and checks each draft token is head j's argmax, computed here directly:
// z = h + SiLU(W_j h (+ U_j x) + b_j), logits = z · Eᵀ, x the embedding of the prompt's last
// token for head 0 and of draft j-1 after it; K caps the drafts; no hidden, no draft.
func TestHeadProposerDrafts(t *testing.T) {
	for _, tok := range []bool{false, true} {
		testHeadProposer(t, tok)
	}
}

func testHeadProposer(t *testing.T, tokenInput bool) {
	m := headTestModel(t)
	head := headRandom(t, m, 3, tokenInput)
	p, err := NewHeadProposer(head, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hp engine.HiddenProposer = p
	if !hp.NeedsHidden() {
		t.Fatal("NeedsHidden is false")
	}
	c := m.NewCache(32)
	c.KeepHidden(true)
	prompt := []int{1, 403, 407, 261, 378}
	if _, err := m.Forward(c, prompt[:len(prompt)-1], 0, false); err != nil {
		t.Fatal(err)
	}
	hidden := append([]float32(nil), c.Hidden()...) // the row that produced prompt's last token
	reqs := []engine.ProposeRequest{
		{ID: 1, Tokens: prompt, K: 5, Hidden: hidden},
		{ID: 2, Tokens: prompt, K: 2, Hidden: hidden},
		{ID: 3, Tokens: prompt, K: 4},
	}
	if err := hp.Propose(reqs); err != nil {
		t.Fatal(err)
	}
	e, err := OutputMatrix(m).Float32()
	if err != nil {
		t.Fatal(err)
	}
	embd, err := TokenEmbedding(m)
	if err != nil {
		t.Fatal(err)
	}
	D, V := head.Dim, head.Vocab
	want := make([]int, 3)
	prev := prompt[len(prompt)-1]
	for j := range 3 {
		z := make([]float64, D)
		for i := range D {
			a := float64(head.B[j][i])
			for k := range D {
				a += float64(head.W[j][i*D+k]) * float64(hidden[k])
				if tokenInput {
					a += float64(head.U[j][i*D+k]) * float64(embd[prev*D+k])
				}
			}
			z[i] = float64(hidden[i]) + float64(Silu(float32(a)))
		}
		best, bestV := 0, -1e300
		for v := range V {
			var s float64
			for i := range D {
				s += z[i] * float64(e[v*D+i])
			}
			if s > bestV {
				best, bestV = v, s
			}
		}
		want[j], prev = best, best
	}
	if got := reqs[0].Draft; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("token input %v, K=5 with 3 heads: drafts %v, want %v", tokenInput, got, want)
	}
	if got := reqs[1].Draft; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("K=2: drafts %v, want %v", got, want[:2])
	}
	if len(reqs[2].Draft) != 0 || reqs[0].Probs != nil {
		t.Errorf("no hidden state: drafts %v; probs %v", reqs[2].Draft, reqs[0].Probs != nil)
	}
}

// TestHeadProposerMismatch: a head for another width or vocabulary is refused at start,
// naming both; a file that is not a head is refused by LoadHead.
func TestHeadProposerMismatch(t *testing.T) {
	m := headTestModel(t)
	for _, h := range []*Head{NewHead(m.Config.Dim+1, m.Config.Vocab, 2, "x"), NewHead(m.Config.Dim, 4096, 2, "x")} {
		_, err := NewHeadProposer(h, m, nil)
		if err == nil || !strings.Contains(err.Error(), "vocabulary") {
			t.Errorf("head %dx%d on a %dx%d target: error %v", h.Dim, h.Vocab, m.Config.Dim, m.Config.Vocab, err)
		}
	}
	if _, err := OpenHeadProposer(fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"), m, nil); err == nil || !strings.Contains(err.Error(), "medusa") {
		t.Errorf("OpenHeadProposer of a model file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "wide.gguf")
	if err := NewHead(m.Config.Dim*2, m.Config.Vocab, 1, "x").Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHeadProposer(path, m, nil); err == nil || !strings.Contains(err.Error(), "width 128") {
		t.Errorf("OpenHeadProposer of a head for another width: %v", err)
	}
}

// TestHeadFileF16 writes the matrices as F16 and reads them back within F16's rounding,
// biases exactly; an unsupported type is refused.
func TestHeadFileF16(t *testing.T) {
	m := headTestModel(t)
	h := headRandom(t, m, 2, true)
	path := filepath.Join(t.TempDir(), "head16.gguf")
	if err := h.SaveAs(path, tensor.F16); err != nil {
		t.Fatal(err)
	}
	back, err := LoadHead(path)
	if err != nil {
		t.Fatal(err)
	}
	for j := range 2 {
		for i, w := range h.W[j] {
			if d := back.W[j][i] - w; d > 1e-3*(1+headAbs(w)) || -d > 1e-3*(1+headAbs(w)) {
				t.Fatalf("W[%d][%d] = %v read back as %v", j, i, w, back.W[j][i])
			}
		}
		for i, u := range h.U[j] {
			if d := back.U[j][i] - u; d > 1e-3*(1+headAbs(u)) || -d > 1e-3*(1+headAbs(u)) {
				t.Fatalf("U[%d][%d] = %v read back as %v", j, i, u, back.U[j][i])
			}
		}
		for i, b := range h.B[j] {
			if back.B[j][i] != b {
				t.Fatalf("B[%d][%d] = %v read back as %v", j, i, b, back.B[j][i])
			}
		}
	}
	if err := h.SaveAs(path, tensor.Q8_0); err == nil {
		t.Error("SaveAs Q8_0: no error")
	}
}

func headAbs(x float32) float32 { return max(x, -x) }
