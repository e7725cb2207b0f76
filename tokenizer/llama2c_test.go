// Tests of the SentencePiece path on stories260K's tok512.bin against llama.cpp's reference
// outputs in testdata/reference.

package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func loadTok512(t testing.TB) *Tokenizer {
	t.Helper()
	v, err := VocabFromLlama2C(fixture.Path(t, "models", "stories260K", "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type refJSON struct {
	Prompt     string `json:"prompt"`
	PromptIDs  []int  `json:"prompt_ids"`
	GreedyIDs  []int  `json:"greedy_ids"`
	GreedyText string `json:"greedy_text"`
	ValidUTF8  bool   `json:"greedy_text_valid_utf8"`
}

func TestTok512References(t *testing.T) {
	tok := loadTok512(t)
	dir := fixture.Path(t, "reference")
	files, _ := filepath.Glob(filepath.Join(dir, "*__p*.json"))
	if len(files) == 0 {
		t.Skip("no reference JSONs")
	}
	checkedText := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r refJSON
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got := tok.Encode(r.Prompt, true, true)
		if !equalInts(got, r.PromptIDs) {
			t.Errorf("%s: Encode(%q) = %v, want %v", filepath.Base(f), r.Prompt, got, r.PromptIDs)
		}
		if back := tok.Decode(got); back != r.Prompt {
			t.Errorf("%s: Decode(Encode(%q)) = %q", filepath.Base(f), r.Prompt, back)
		}
		if r.ValidUTF8 {
			checkedText++
			if d := tok.Decode(r.GreedyIDs); d != r.GreedyText {
				t.Errorf("%s: Decode(greedy) = %q, want %q", filepath.Base(f), d, r.GreedyText)
			}
		}
		checkStreaming(t, tok, r.GreedyIDs)
	}
	if checkedText == 0 {
		t.Error("no reference had valid UTF-8 greedy text")
	}
}

func TestTok512BrownCount(t *testing.T) {
	tok := loadTok512(t)
	b, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(string(b), true, false)
	if len(ids) != 60113 {
		t.Errorf("brown_val_100k: %d tokens, llama.cpp gives 60113", len(ids))
	}
	if d := tok.Decode(ids); d != string(b) {
		t.Errorf("brown_val_100k does not round-trip")
	}
}

func TestLlama2CBadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(p, []byte{16, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := VocabFromLlama2C(p, 10); err == nil {
		t.Fatal("expected an error for a truncated tokenizer.bin")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkStreaming feeds ids one by one through a Decoder and compares with Decode.
func checkStreaming(t testing.TB, tok *Tokenizer, ids []int) {
	t.Helper()
	d := tok.NewDecoder()
	var s string
	for _, id := range ids {
		s += d.Add(id)
	}
	s += d.Flush()
	if want := tok.Decode(ids); s != want {
		t.Errorf("streaming decode %q != Decode %q", s, want)
	}
}
