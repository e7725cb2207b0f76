package drafthead

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/data"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/spec"
)

// sampleText draws n sequences of length l from m at temperature 1 (BOS first).
func sampleText(t *testing.T, m *model.Model, n, l int, seed uint64) []int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []int
	V := m.Config.Vocab
	for range n {
		c := m.NewCache(l)
		tok := 1
		out = append(out, tok)
		for len(out)%l != 0 {
			logits, err := m.Decode(c, tok)
			if err != nil {
				t.Fatal(err)
			}
			mx := logits[0]
			for _, x := range logits {
				mx = max(mx, x)
			}
			var sum float64
			for _, x := range logits[:V] {
				sum += math.Exp(float64(x - mx))
			}
			u, acc := rng.Float64()*sum, 0.0
			tok = V - 1
			for i, x := range logits[:V] {
				if acc += math.Exp(float64(x - mx)); acc >= u {
					tok = i
					break
				}
			}
			out = append(out, tok)
		}
	}
	return out
}

// writeData writes a prepared data directory with the given splits.
func writeData(t *testing.T, vocab int, trainIDs, valIDs []int) string {
	t.Helper()
	dir := t.TempDir()
	m := &data.Meta{Format: data.FormatName, Version: data.Version, Tokenizer: "tokenizer.json",
		VocabSize: vocab, DType: data.DTypeFor(vocab)}
	for _, s := range []struct {
		name string
		ids  []int
		dst  *[]data.Shard
	}{{"train", trainIDs, &m.Train}, {"val", valIDs, &m.Val}} {
		w, err := data.NewShardWriter(dir, s.name, vocab, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(s.ids); err != nil {
			t.Fatal(err)
		}
		if *s.dst, err = w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteMeta(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTrainImprovesHeads trains 2 heads on stories260K over its own samples: after training,
// every head agrees with the target's greedy tokens more often than the untrained head (the
// identity, which guesses the target's next token again), and the file written and read back
// gives the same heads.
func TestTrainImprovesHeads(t *testing.T) {
	m, err := model.OpenGGUF(fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dir := writeData(t, m.Config.Vocab, sampleText(t, m, 24, 128, 1), sampleText(t, m, 6, 128, 2))
	o := Options{Heads: 2, SeqLen: 64, ValWindows: 8, LR: 3e-3, LogEvery: -1}
	_, before, err := Train(m, "stories260K", dir, o) // no steps: the untrained heads
	if err != nil {
		t.Fatal(err)
	}
	o.Steps = 150
	head, after, err := Train(m, "stories260K", dir, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Steps, o.Windows = 120, 24 // cycling over 24 kept windows
	_, cached, err := Train(m, "stories260K", dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before:\n%vafter:\n%vafter, 24 windows kept:\n%v", before, after, cached)
	for j := range after.ValAcc {
		if after.ValAcc[j] < before.ValAcc[j]+0.05 || cached.ValAcc[j] < before.ValAcc[j]+0.02 {
			t.Errorf("head %d: validation agreement %.3f after training (%.3f over kept windows), %.3f before",
				j, after.ValAcc[j], cached.ValAcc[j], before.ValAcc[j])
		}
	}
	// Simulated greedy speculation on the target's continuations of 3 val prompts: the trained
	// heads get more drafts accepted than the untrained ones, and the counts add up.
	prompts, err := ValPrompts(dir, 3, 16)
	if err != nil {
		t.Fatal(err)
	}
	measure := func(h *spec.Head) *Acceptance {
		p, err := spec.NewHeadProposer(h, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := MeasureAcceptance(m, p, 2, prompts, 48)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0
		for i, n := range a.AcceptedPerPos {
			sum += n
			if i > 0 && n > a.AcceptedPerPos[i-1] {
				t.Errorf("accepted at position %d more often than at %d: %v", i, i-1, a.AcceptedPerPos)
			}
		}
		if a.Tokens != a.Verifications+sum || a.Verifications == 0 {
			t.Errorf("%d tokens from %d verifications with %v accepted", a.Tokens, a.Verifications, a.AcceptedPerPos)
		}
		return a
	}
	untrained, trained := measure(spec.NewHead(m.Config.Dim, m.Config.Vocab, 2, "")), measure(head)
	// With token input (the heads chain through their drafts).
	o.Steps, o.Windows, o.TokenInput = 150, 0, true
	chained, chainedRep, err := Train(m, "stories260K", dir, o)
	if err != nil {
		t.Fatal(err)
	}
	chainedAcc := measure(chained)
	t.Logf("untrained: %vtrained: %vwith token input:\n%v%v", untrained, trained, chainedRep, chainedAcc)
	if trained.AcceptedPerPos[0] <= untrained.AcceptedPerPos[0] || chainedAcc.AcceptedPerPos[0] <= untrained.AcceptedPerPos[0] {
		t.Errorf("first draft accepted %d times with trained heads (%d with token input), %d untrained",
			trained.AcceptedPerPos[0], chainedAcc.AcceptedPerPos[0], untrained.AcceptedPerPos[0])
	}
	for j := range chainedRep.ValAcc {
		if chainedRep.ValAcc[j] < before.ValAcc[j]+0.05 {
			t.Errorf("token input: head %d: validation agreement %.3f after training, %.3f before", j, chainedRep.ValAcc[j], before.ValAcc[j])
		}
	}
	path := filepath.Join(t.TempDir(), "head.gguf")
	if err := head.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := spec.LoadHead(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.K() != 2 || back.Dim != m.Config.Dim || back.Vocab != m.Config.Vocab || back.Steps != 150 || len(back.ValAcc) != 2 {
		t.Fatalf("read back %d heads %dx%d, %d steps, accuracies %v", back.K(), back.Dim, back.Vocab, back.Steps, back.ValAcc)
	}
	for j := range 2 {
		for i := range head.W[j] {
			if head.W[j][i] != back.W[j][i] {
				t.Fatalf("head %d: W[%d] %v read back as %v", j, i, head.W[j][i], back.W[j][i])
			}
		}
	}
}
