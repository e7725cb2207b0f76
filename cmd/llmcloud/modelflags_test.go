package main

import (
	"io"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

// The sampling flags: unset, the model's defaults; no model defaults, temperature 0.8 and
// top-p 0.95; a flag given (--temperature 0 too) wins over both.
func TestSamplingFlagDefaults(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := func(v int) *int { return &v }
	modelDef := loader.Defaults{Temperature: f(0.6), TopP: f(0.9), TopK: k(20), MinP: f(0.05), RepetitionPenalty: f(1.1)}
	cases := []struct {
		name                  string
		args                  []string
		def                   loader.Defaults
		temp, topP, minP, rep float64
		topK                  int
	}{
		{"flags unset: the model's defaults", nil, modelDef, 0.6, 0.9, 0.05, 1.1, 20},
		{"no model defaults: 0.8 and 0.95", nil, loader.Defaults{}, 0.8, 0.95, 0, 1, 0},
		{"explicit flags win", []string{"--temperature", "0.3", "--top-p", "0.5", "--top-k", "3", "--min-p", "0", "--repetition-penalty", "1"}, modelDef, 0.3, 0.5, 0, 1, 3},
		{"--temperature 0 is greedy over a model default", []string{"--temperature", "0"}, modelDef, 0, 0.9, 0.05, 1.1, 20},
		{"--temperature 0 is greedy over the fallback", []string{"--temperature", "0"}, loader.Defaults{}, 0, 0.95, 0, 1, 0},
	}
	for _, c := range cases {
		fs := newFlags("test", io.Discard)
		var sf samplingFlags
		sf.register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		p := sf.params(fs, c.def)
		if p.Temperature != c.temp || p.TopP != c.topP || p.MinP != c.minP || p.RepetitionPenalty != c.rep || p.TopK != c.topK {
			t.Errorf("%s: got temperature %v top-p %v min-p %v repetition-penalty %v top-k %d, want %v %v %v %v %d",
				c.name, p.Temperature, p.TopP, p.MinP, p.RepetitionPenalty, p.TopK, c.temp, c.topP, c.minP, c.rep, c.topK)
		}
	}
}

// `generate -h` says where the sampling defaults come from.
func TestSamplingHelp(t *testing.T) {
	var out, errb strings.Builder
	if code := runMain([]string{"generate", "-h"}, &out, &errb); code != 0 {
		t.Fatalf("generate -h: exit %d", code)
	}
	for _, want := range []string{"0 = greedy (default: the model's own", "general.sampling.temp, else 0.8)", "(default: the model's, else 0.95)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("generate -h lacks %q:\n%s", want, errb.String())
		}
	}
}
