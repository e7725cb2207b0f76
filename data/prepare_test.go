// Tests of Prepare: text -> shards -> Open gives exactly the direct encoding of every document,
// BOS first, split as documented; refusals leave nothing behind.
package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tokenizer"
)

const testText = "The jury said it did find that the election was conducted.\nA second line of the first document.\n" +
	"\n\n" +
	"  Unicode: héllo wörld, 你好 🙂 — numbers 1234567 and 3.14.\r\n" +
	"\n" +
	"I'm sure they'll say we've been there.\n   \n" +
	"Tabs\tand   runs   of  spaces  \n" +
	"\n" +
	"the theater in the thin air\n" +
	"last document without a final newline"

// docsOf splits testText by hand, as docs/formats/shards.md describes the paragraph mode.
var testDocs = []string{
	"The jury said it did find that the election was conducted.\nA second line of the first document.",
	"  Unicode: héllo wörld, 你好 🙂 — numbers 1234567 and 3.14.",
	"I'm sure they'll say we've been there.",
	"Tabs\tand   runs   of  spaces  ",
	"the theater in the thin air\nlast document without a final newline",
}

func readAll(t *testing.T, d *Dataset) []int {
	t.Helper()
	buf := make([]int32, d.Len())
	if err := d.Read(buf, 0); err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(buf))
	for i, v := range buf {
		out[i] = int(v)
	}
	return out
}

func TestPrepareRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	tokPath := writeTestTokenizer(t, filepath.Join(tmp))
	in := filepath.Join(tmp, "in.txt")
	if err := os.WriteFile(in, []byte(testText), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := tokenizer.VocabFromHFJSON(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(docs ...string) []int {
		var ids []int
		for _, d := range docs {
			ids = append(ids, v.BOS)
			ids = append(ids, tok.Encode(d, false, false)...)
		}
		return ids
	}
	// val fraction 0.4 over 5 documents: documents 2 and 4 (floor((i+1)*0.4) steps at i=2 and i=4)
	out := filepath.Join(tmp, "out")
	st, err := Prepare(PrepareOptions{Tokenizer: tmp, Input: in, ValFraction: 0.4, OutDir: out, ShardTokens: 37})
	if err != nil {
		t.Fatal(err)
	}
	wantTrain := encode(testDocs[0], testDocs[1], testDocs[3])
	wantVal := encode(testDocs[2], testDocs[4])
	if st.TrainDocs != 3 || st.ValDocs != 2 || st.TrainTokens != int64(len(wantTrain)) || st.ValTokens != int64(len(wantVal)) {
		t.Fatalf("stats %+v, want 3/2 documents and %d/%d tokens", st, len(wantTrain), len(wantVal))
	}
	for split, want := range map[string][]int{"train": wantTrain, "val": wantVal} {
		d, err := Open(out, split)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, d); !slices.Equal(got, want) {
			t.Errorf("%s: tokens differ from the direct encoding\n got %v\nwant %v", split, got, want)
		}
		if len(d.meta.Train) < 2 {
			t.Errorf("%d train shards of at most 37 tokens for %d tokens", len(d.meta.Train), len(wantTrain))
		}
		if d.VocabSize() != len(v.Tokens) || d.Meta().BOSID != v.BOS || d.Meta().DType != "uint16" {
			t.Errorf("meta %+v", d.Meta())
		}
		if p := d.TokenizerPath(); !filepath.IsAbs(p) {
			t.Errorf("TokenizerPath %q is not absolute", p)
		} else if w, err := tokenizer.VocabFromHFJSON(p); err != nil || w.BOS != v.BOS {
			t.Errorf("copied tokenizer: %v", err)
		}
		d.Close()
	}

	// a separate val file, lines as documents, decode gives the text back
	out2 := filepath.Join(tmp, "out2")
	if _, err := Prepare(PrepareOptions{Tokenizer: tokPath, Input: in, ValInput: in, OutDir: out2, DocSplit: "line"}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(out2, "val")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var lines []string
	for l := range strings.SplitSeq(testText, "\n") {
		if l = strings.TrimSuffix(l, "\r"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if got := readAll(t, d); !slices.Equal(got, encode(lines...)) {
		t.Errorf("line documents differ from the direct encoding")
	}
	if got, want := tok.Decode(readAll(t, d)), strings.Join(lines, ""); got != want {
		t.Errorf("decode: %q, want %q", got, want)
	}
}

func TestPrepareRefusals(t *testing.T) {
	tmp := t.TempDir()
	writeTestTokenizer(t, tmp)
	in := filepath.Join(tmp, "in.txt")
	empty := filepath.Join(tmp, "empty.txt")
	os.WriteFile(in, []byte(testText), 0o644)
	os.WriteFile(empty, []byte("\n \n\n"), 0o644)
	done := filepath.Join(tmp, "done")
	if _, err := Prepare(PrepareOptions{Tokenizer: tmp, Input: in, OutDir: done}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    PrepareOptions
		want string
	}{
		{"existing", PrepareOptions{Tokenizer: tmp, Input: in, OutDir: done}, "already holds"},
		{"no documents", PrepareOptions{Tokenizer: tmp, Input: empty}, "no documents"},
		{"missing input", PrepareOptions{Tokenizer: tmp, Input: in + ".nope"}, "no such file"},
		{"missing tokenizer", PrepareOptions{Tokenizer: in + ".nope", Input: in}, "no such file"},
		{"both val", PrepareOptions{Tokenizer: tmp, Input: in, ValInput: in, ValFraction: 0.1}, "not both"},
		{"fraction", PrepareOptions{Tokenizer: tmp, Input: in, ValFraction: 1}, "outside [0,1)"},
		{"doc split", PrepareOptions{Tokenizer: tmp, Input: in, DocSplit: "page"}, "page"},
		{"missing val", PrepareOptions{Tokenizer: tmp, Input: in, ValInput: in + ".nope", ShardTokens: 5}, "no such file"},
	}
	for _, c := range cases {
		out := filepath.Join(tmp, "out-"+strings.ReplaceAll(c.name, " ", "-"))
		if c.o.OutDir == "" {
			c.o.OutDir = out
		}
		_, err := Prepare(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if c.o.OutDir == out {
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("%s: left %d files in %s", c.name, len(ents), out)
			}
		}
	}
}
