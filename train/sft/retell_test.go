package sft

import (
	"reflect"
	"strings"
	"testing"
)

func TestGenerateRetell(t *testing.T) {
	docs := []string{
		"Once upon a time, there was a cat. The cat was happy!\nIt said, \"Hi.\" Then it slept.",
		"",
		"Tom had a red ball. He liked it? Yes " + strings.Repeat("very much and more ", 80) + "end.",
	}
	ex := GenerateRetell(docs, 400, 3)
	if len(ex) != 400 {
		t.Fatalf("%d examples, want 400", len(ex))
	}
	if again := GenerateRetell(docs, 400, 3); !reflect.DeepEqual(ex, again) {
		t.Fatal("the same seed gave other examples")
	}
	if other := GenerateRetell(docs, 400, 4); reflect.DeepEqual(ex, other) {
		t.Fatal("another seed gave the same examples")
	}
	flat := []string{strings.Join(strings.Fields(docs[0]), " "), strings.Join(strings.Fields(docs[2]), " ")}
	vocab := map[string]bool{}
	for _, d := range flat {
		for _, w := range strings.FieldsFunc(d, func(c rune) bool { return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') }) {
			vocab[w] = true
		}
	}
	stories := 0
	for i, e := range ex {
		if e.Output != e.Input || e.Input == "" {
			t.Fatalf("example %d: output %q for input %q", i, e.Output, e.Input)
		}
		switch e.Instruction {
		case RetellStory:
			stories++
			if len(e.Input) > retellMaxBytes || strings.Contains(e.Input, "\n") {
				t.Fatalf("example %d: passage of %d bytes or with a line break: %q", i, len(e.Input), e.Input)
			}
			if !strings.Contains(flat[0], e.Input) && !strings.Contains(flat[1], e.Input) {
				t.Fatalf("example %d: passage %q is not from one document", i, e.Input)
			}
			if e.Input != flat[0] && e.Input != flat[1] && len(e.Input) < retellMaxBytes-20 {
				// A whole run of sentences ends a sentence (or is cut to the maximum).
				if c := e.Input[len(e.Input)-1]; !strings.ContainsRune(`.!?"`, rune(c)) && !strings.HasSuffix(flat[0], e.Input) && !strings.HasSuffix(flat[1], e.Input) {
					t.Fatalf("example %d: passage %q does not end a sentence", i, e.Input)
				}
			}
		case RetellWords:
			ws := strings.Fields(e.Input)
			if len(ws) < retellMinWords || len(ws) > retellMaxWords {
				t.Fatalf("example %d: %d words", i, len(ws))
			}
			for _, w := range ws {
				if !vocab[w] {
					t.Fatalf("example %d: word %q is not in the documents", i, w)
				}
			}
		default:
			t.Fatalf("example %d: instruction %q", i, e.Instruction)
		}
	}
	if stories < 200 || stories > 280 {
		t.Errorf("%d passages of 400, want about 240", stories)
	}
	if GenerateRetell([]string{"", " \n"}, 5, 1) != nil {
		t.Error("empty documents gave examples")
	}
}

func TestSentencesAndCut(t *testing.T) {
	got := sentences(`He said, "Hi." She ran! Did he? Yes it is`)
	want := []string{`He said, "Hi."`, `She ran!`, `Did he?`, `Yes it is`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sentences: %q, want %q", got, want)
	}
	if c := cut("aaa bbb ccc", 9); c != "aaa bbb" {
		t.Errorf("cut: %q", c)
	}
	if c := cut("aaaaaaaaaa", 4); c != "aaaa" {
		t.Errorf("cut without a space: %q", c)
	}
}
