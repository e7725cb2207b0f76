// Unigram ("t5") on a hand-made vocabulary with hand-derived best segmentations, a
// tokenizer.json round trip of it, and which normalizer/pre-tokenizer forms load.

package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func handUnigram() *Vocab {
	pieces := []struct {
		s     string
		score float32
		typ   int32
	}{{"<unk>", 0, TypeUnknown}, {"<s>", 0, TypeControl}, {"</s>", 0, TypeControl}, {"▁", -2, TypeNormal},
		{"a", -1, TypeNormal}, {"b", -1, TypeNormal}, {"ab", -1.5, TypeNormal}, {"▁a", -1, TypeNormal},
		{"▁ab", -3, TypeNormal}, {"c", -4, TypeNormal}, {"<0x78>", 0, TypeByte}}
	v := &Vocab{Model: "t5", BOS: 1, EOS: 2, UNK: 0, PAD: -1, EOT: -1, AddBOS: true, AddSpacePrefix: true}
	for _, p := range pieces {
		v.Tokens, v.Scores, v.Types = append(v.Tokens, p.s), append(v.Scores, p.score), append(v.Types, p.typ)
	}
	return v
}

func TestUnigramHand(t *testing.T) {
	v := handUnigram()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	// lowest score -4, so an unknown character costs -14
	cases := []struct {
		text string
		want []int
	}{
		{"ab", []int{7, 5}},             // ▁a b -2 beats ▁ab -3, ▁ ab -3.5, ▁ a b -4
		{"abab", []int{7, 5, 6}},        // ▁a b ab -3.5
		{"x", []int{3, 10}},             // ▁, then x unknown: <0x78> by byte fallback
		{"xyz", []int{3, 0}},            // the run xyz fused into one unknown; y, z have no byte piece: <unk>
		{"cab c", []int{3, 9, 6, 3, 9}}, // ▁ c ab ▁ c
		{"", nil},
	}
	for _, c := range cases {
		if got := tok.Encode(c.text, false, false); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := tok.Decode(tok.Encode("abab cab", true, false)); got != "abab cab" {
		t.Errorf("Decode round trip: %q", got)
	}
	js, err := MarshalHFJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, js, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := VocabFromHFJSON(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.Model != "t5" || !slices.Equal(w.Tokens, v.Tokens) || !slices.Equal(w.Scores, v.Scores) ||
		!slices.Equal(w.Types, v.Types) || w.UNK != 0 || w.BOS != 1 || w.EOS != 2 || !w.AddBOS || !w.AddSpacePrefix {
		t.Fatalf("Unigram tokenizer.json read back differs: %+v", w)
	}
}

// SentencePiece-style files llmcloud cannot run exactly are refused with the reason; Gemma's
// no-op split at spaces is accepted.
func TestSentencePieceJSONForms(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "spm", "tok512.json"))
	if err != nil {
		t.Fatal(err)
	}
	replace := `{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}`
	cases := []struct {
		normalizer, pre, err string
		prefix               bool
	}{
		{replace, `{"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false}`, "", false},
		{`{"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": "AAAA"}, ` + replace + `]}`, "null", "Precompiled", false},
		{"null", `{"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}]}`, "WhitespaceSplit", false},
		{"null", "null", "neither", false},
		{"null", `{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true}`, "", true},
	}
	for _, c := range cases {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		var n, p any
		json.Unmarshal([]byte(c.normalizer), &n)
		json.Unmarshal([]byte(c.pre), &p)
		doc["normalizer"], doc["pre_tokenizer"] = n, p
		b, _ := json.Marshal(doc)
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := VocabFromHFJSON(path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s / %s: %v", c.normalizer, c.pre, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s / %s: error %v, want one naming %s", c.normalizer, c.pre, err, c.err)
		case err == nil && v.AddSpacePrefix != c.prefix:
			t.Errorf("%s / %s: AddSpacePrefix %v", c.normalizer, c.pre, v.AddSpacePrefix)
		}
	}
}

// A tokenizer.json BPE without byte pieces: runs of unknown characters become one <unk>
// (Hugging Face's fuse_unk), as the Unigram model does too; the ids are what tokenizers 0.23.2
// gives for the same file.
func TestSentencePieceBPEUnknownFused(t *testing.T) {
	js := `{"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
		"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
		"pre_tokenizer": null,
		"model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>",
			"vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "b": 4, "▁a": 5}, "merges": ["▁ a"]}}`
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := VocabFromHFJSON(p)
	tok := newTok(t, v, err)
	for text, want := range map[string][]int{"a☃☃b": {5, 0, 4}, "☃a☃": {2, 0, 3, 0}, "ab a": {5, 4, 5}} {
		if got := tok.Encode(text, false, false); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
}
