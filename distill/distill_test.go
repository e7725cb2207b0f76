package distill

import (
	"context"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
)

func TestRepetition(t *testing.T) {
	cases := []struct {
		ids  []int
		want float64
	}{
		{[]int{1, 2, 3}, 0},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, 0},
		// 1 2 3 4 1 2 3 4: 5 four-grams, the last (1 2 3 4) repeats the first.
		{[]int{1, 2, 3, 4, 1, 2, 3, 4}, 0.2},
		// a loop of one id: every four-gram after the first repeats.
		{[]int{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, 7.0 / 8},
	}
	for _, c := range cases {
		if got := Repetition(c.ids, 4); got != c.want {
			t.Errorf("Repetition(%v) = %v, want %v", c.ids, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	in := "  Once upon a time.  \n\n\n  They played.\r\n \n"
	want := "Once upon a time.\nThey played."
	if got := Clean(in); got != want {
		t.Errorf("Clean = %q, want %q", got, want)
	}
}

// stories260K (a llama2.c model: it ends a story by starting the next with BOS) gives whole
// stories: each kept document was ended by the model, holds no blank line, and the counts add
// up.
func TestRunStories260K(t *testing.T) {
	b, err := loader.Open(fixture.Path(t, "models", "stories260K", "stories260K.bin"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Model.Pool = kernels.NewPool(2)
	o := Options{Docs: 6, Temperature: 0.8, TopP: 0.9, InFlight: 4, Seed: 1, MaxRepeat: 0.2, Engine: engine.DefaultOptions()}
	var docs []string
	st, err := Run(context.Background(), b.Model, b.Tok, o, func(d string) error { docs = append(docs, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 6 || st.Kept != 6 || st.Sampled != st.Kept+st.DroppedLength+st.DroppedRepeat+st.DroppedEmpty {
		t.Fatalf("%d documents, stats %+v", len(docs), st)
	}
	for _, d := range docs {
		if d == "" || strings.Contains(d, "\n\n") || Clean(d) != d {
			t.Errorf("document not clean: %q", d)
		}
		if words := strings.Fields(d); len(words) < 10 {
			t.Errorf("document of %d words: %q", len(words), d)
		}
	}
	t.Logf("%+v; first: %q", st, docs[0])
}
