// Tests of the sampling defaults: GGUF general.sampling.* keys are read (and survive a
// Hugging Face -> GGUF conversion), and Params falls back to 0.8 / 0.95.
package loader_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/synth"
)

// A GGUF file with llama.cpp's general.sampling.* keys opens with them as its Defaults; the
// float32 values read back as the decimals written.
func TestGGUFSamplingKeys(t *testing.T) {
	o := synth.Options{Arch: "llama", Dim: 32, Layers: 1, Heads: 2, KVHeads: 1, Seed: 4}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	temp, topP, minP, rep, topK := 0.7, 0.95, 0.05, 1.1, 20
	p.Defaults = loader.Defaults{Temperature: &temp, TopP: &topP, MinP: &minP, RepetitionPenalty: &rep, TopK: &topK}
	path := filepath.Join(t.TempDir(), "s.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"general.sampling.temp", "general.sampling.top_p", "general.sampling.top_k",
		"general.sampling.min_p", "general.sampling.penalty_repeat"} {
		if _, ok := f.Get(k); !ok {
			t.Errorf("written file has no %s", k)
		}
	}
	f.Close()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := b.Defaults
	if d.Temperature == nil || *d.Temperature != 0.7 || d.TopP == nil || *d.TopP != 0.95 || d.MinP == nil || *d.MinP != 0.05 ||
		d.RepetitionPenalty == nil || *d.RepetitionPenalty != 1.1 || d.TopK == nil || *d.TopK != 20 {
		t.Errorf("defaults %s", fmtDefaults(d))
	}
	if got := d.Params(); got.Temperature != 0.7 || got.TopP != 0.95 || got.TopK != 20 || got.MinP != 0.05 || got.RepetitionPenalty != 1.1 {
		t.Errorf("Params %+v", got)
	}

	// Without the keys: no defaults, and Params falls back to temperature 0.8, top-p 0.95.
	p.Defaults = loader.Defaults{}
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b2, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if d := b2.Defaults; d != (loader.Defaults{}) {
		t.Errorf("a file without general.sampling.* has defaults %s", fmtDefaults(d))
	}
	if got := b2.Defaults.Params(); got.Temperature != 0.8 || got.TopP != 0.95 || got.TopK != 0 || got.MinP != 0 || got.RepetitionPenalty != 1 {
		t.Errorf("fallback Params %+v, want temperature 0.8, top-p 0.95, the rest off", got)
	}
}

func fmtDefaults(d loader.Defaults) string {
	s := ""
	for _, f := range []struct {
		n string
		v *float64
	}{{"temperature", d.Temperature}, {"top_p", d.TopP}, {"min_p", d.MinP}, {"repetition_penalty", d.RepetitionPenalty}} {
		if f.v != nil {
			s += " " + f.n + "=" + strconv.FormatFloat(*f.v, 'g', -1, 64)
		}
	}
	if d.TopK != nil {
		s += " top_k=" + strconv.Itoa(*d.TopK)
	}
	return "{" + s + " }"
}
