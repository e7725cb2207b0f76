package defaultmodel

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
)

// Path writes the embedded file once and returns the same file again; the loader opens it as
// the default model: a llama with the recipe's 4096-token tokenizer, under Name.
func TestPathOpensAsModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(b, Bytes()) {
		t.Fatalf("%s does not hold the embedded model (%v)", p, err)
	}
	if len(Bytes()) > 25<<20 {
		t.Errorf("embedded model is %d bytes, over the 25 MiB budget", len(Bytes()))
	}
	if again, _ := Path(); again != p {
		t.Errorf("second Path %q, first %q", again, p)
	}
	bn, err := loader.Open(p, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bn.Close()
	if bn.Name != Name || bn.Model.Config.Arch != "llama" || bn.Tok == nil || bn.Tok.VocabSize() != 4096 {
		t.Errorf("name %q, config %+v, tokenizer %v", bn.Name, bn.Model.Config, bn.Tok != nil)
	}
}

// A stale or truncated cache file is replaced, not used.
func TestMaterializeReplacesBadCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p, err := materialize()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, Bytes()[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if q, err := materialize(); err != nil || q != p {
		t.Fatalf("materialize: %q, %v", q, err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, Bytes()) {
		t.Error("the truncated cache file was not rewritten")
	}
}

// The perplexity recipes/default/README.md reports for the default model on the held-out
// stories (the README's `llmcloud perplexity` command: the whole file, BOS first, chunks of
// 512 tokens, the second half of each scored) is what the model gives now, within 1%.
func TestPerplexityAsReported(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "recipes", "default", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`PPL = ([0-9.]+)`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("recipes/default/README.md reports no `PPL = <number>`")
	}
	want, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join("..", "recipes", "default", "data", "val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(p, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Model.Pool = kernels.NewPool(2)
	res, err := eval.PerplexityChunks(b.Model, b.Tok.Encode(string(text), true, false), 512, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PPL %.4f over %d tokens; README: %.4f", res.PPL, res.Scored, want)
	if math.Abs(res.PPL-want) > 0.01*want {
		t.Errorf("perplexity %.4f, README reports %.4f (more than 1%% apart)", res.PPL, want)
	}
}
