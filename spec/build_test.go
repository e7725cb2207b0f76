// Tests of Build: the default model as its own draft builds a working proposer; a draft with
// another vocabulary, a context too short, a missing file, k out of range or an unavailable
// method fail at start-up with an error naming the config field.
package spec

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestBuildDraft(t *testing.T) {
	target := openBundle(t, defaultModelPath())
	cfg, err := ParseConfig(`{"method": "draft_model", "model": "` + defaultModelPath() + `", "num_speculative_tokens": 3, "disable_by_batch_size": 16}`)
	if err != nil {
		t.Fatal(err)
	}
	so, err := Build(cfg, target.Model, target.Tok, 0, DraftOptions{Invariant: true})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := so.Proposer.(*Draft)
	if !ok || so.NumTokens != 3 || so.DisableByBatchSize != 16 {
		t.Fatalf("Build: %+v", so)
	}
	t.Cleanup(func() {
		if err := so.Proposer.(io.Closer).Close(); err != nil {
			t.Error(err)
		}
	})
	if d.Model().Pool != target.Model.Pool {
		t.Error("the draft does not run on the target's kernel pool")
	}
	toks := target.Tok.Encode("Once upon a time", true, false)
	reqs := []engine.ProposeRequest{{ID: 1, Tokens: toks, K: 3}}
	if err := so.Proposer.Propose(reqs); err != nil || len(reqs[0].Draft) != 3 {
		t.Fatalf("draft %v, error %v", reqs[0].Draft, err)
	}
}

func TestBuildNGram(t *testing.T) {
	target := openBundle(t, defaultModelPath())
	cfg, err := ParseConfig(`{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	so, err := Build(cfg, target.Model, target.Tok, 0, DraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := so.Proposer.(*NGram); !ok || g.min != 2 || g.max != 3 || so.NumTokens != 5 {
		t.Fatalf("Build: %+v", so)
	}
}

func TestBuildErrors(t *testing.T) {
	target := openBundle(t, defaultModelPath())
	other := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	for _, tc := range []struct {
		name   string
		cfg    Config
		maxLen int
		want   string
	}{
		{"other vocabulary", Config{Method: MethodDraft, Model: other, NumTokens: 4},
			0, "speculative-config: model: " + other + " has a vocabulary of 512 tokens, the target 4096"},
		{"missing file", Config{Method: MethodDraft, Model: filepath.Join(t.TempDir(), "none.gguf"), NumTokens: 4},
			0, "speculative-config: model: "},
		{"no model", Config{Method: MethodDraft, NumTokens: 4}, 0, "speculative-config: model: missing"},
		{"k zero", Config{Method: MethodDraft, Model: defaultModelPath()}, 0, "speculative-config: num_speculative_tokens: 0"},
		{"k too large", Config{Method: MethodDraft, Model: defaultModelPath(), NumTokens: 17}, 0, "speculative-config: num_speculative_tokens: 17"},
		{"context too short", Config{Method: MethodDraft, Model: defaultModelPath(), NumTokens: 4},
			4096, "speculative-config: model: the draft's context length 512 is shorter than the served max model length 4096"},
		{"max_model_len above the draft's", Config{Method: MethodDraft, Model: defaultModelPath(), NumTokens: 4, MaxModelLen: 1000},
			4096, "speculative-config: max_model_len: 1000 is above the draft's context length 512"},
		{"eagle", Config{Method: MethodEagle, Model: "head", NumTokens: 4}, 0, "speculative-config: method: eagle is not available"},
		{"unknown method", Config{Method: "mlp_speculator", NumTokens: 4}, 0, "speculative-config: method: "},
		{"medusa without a head", Config{Method: MethodMedusa, NumTokens: 4}, 0, "speculative-config: model: missing"},
		{"medusa, not a head file", Config{Method: MethodMedusa, Model: defaultModelPath(), NumTokens: 4}, 0, "speculative-config: model: "},
	} {
		_, err := Build(tc.cfg, target.Model, target.Tok, tc.maxLen, DraftOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q...", tc.name, err, tc.want)
		}
	}
	// a draft limited by max_model_len to a shorter length than served is accepted
	so, err := Build(Config{Method: MethodDraft, Model: defaultModelPath(), NumTokens: 2, MaxModelLen: 100}, target.Model, target.Tok, 4096, DraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer so.Proposer.(io.Closer).Close()
	long := make([]int, 100)
	reqs := []engine.ProposeRequest{{ID: 1, Tokens: long, K: 2}, {ID: 2, Tokens: long[:99], K: 2}}
	if err := so.Proposer.Propose(reqs); err != nil || len(reqs[0].Draft) != 1 || len(reqs[1].Draft) != 2 {
		t.Fatalf("max_model_len 100: drafts of %d and %d tokens (want 1, 2), error %v", len(reqs[0].Draft), len(reqs[1].Draft), err)
	}
}

func TestSameTokens(t *testing.T) {
	a := openBundle(t, defaultModelPath()).Tok
	b := openBundle(t, fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")).Tok
	if err := sameTokens(a, a); err != nil {
		t.Error(err)
	}
	if err := sameTokens(a, nil); err != nil {
		t.Error(err)
	}
	if err := sameTokens(b, a); err == nil || !strings.Contains(err.Error(), "512 tokens") {
		t.Errorf("stories260K vs default: %v", err)
	}
}

// TestBuildMedusa: method medusa loads a draft-head file and checks it against the target
// (width and vocabulary) and k against its number of heads.
func TestBuildMedusa(t *testing.T) {
	m := headTestModel(t)
	path := filepath.Join(t.TempDir(), "head.gguf")
	if err := headRandom(t, m, 3, true).Save(path); err != nil {
		t.Fatal(err)
	}
	so, err := Build(Config{Method: MethodMedusa, Model: path, NumTokens: 3}, m, nil, 0, DraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hp, ok := so.Proposer.(engine.HiddenProposer); !ok || !hp.NeedsHidden() {
		t.Fatalf("proposer %T is not a HiddenProposer", so.Proposer)
	}
	if _, err := Build(Config{Method: MethodMedusa, Model: path, NumTokens: 4}, m, nil, 0, DraftOptions{}); err == nil ||
		!strings.Contains(err.Error(), "num_speculative_tokens: 4 is more than the 3 heads") {
		t.Errorf("k above the heads: %v", err)
	}
	other := openBundle(t, defaultModelPath())
	if _, err := Build(Config{Method: MethodMedusa, Model: path, NumTokens: 2}, other.Model, other.Tok, 0, DraftOptions{}); err == nil ||
		!strings.HasPrefix(err.Error(), "speculative-config: model: spec: draft head") {
		t.Errorf("head of another target: %v", err)
	}
}
