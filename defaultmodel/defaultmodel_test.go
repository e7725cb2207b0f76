package defaultmodel

import (
	"bytes"
	"os"
	"testing"

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
	if len(Bytes()) > 20<<20 {
		t.Errorf("embedded model is %d bytes, over the 20 MiB budget", len(Bytes()))
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
