// The sampling settings a request leaves out: the model's defaults, else temperature 0.8 and
// top-p 0.95 (with UseModelDefaults, as `llmcloud serve` runs); explicit fields always win.
package server

import (
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

func TestRequestSamplingDefaults(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := func(v int) *int { return &v }
	modelDef := loader.Defaults{Temperature: f(0.6), TopP: f(0.9), TopK: k(20), MinP: f(0.05), RepetitionPenalty: f(1.1)}
	cases := []struct {
		name    string
		useDef  bool
		def     loader.Defaults
		req     api.SamplingFields
		temp    float64
		topP    float64
		topK    int
		repPen  float64
		minP    float64
		comment string
	}{
		{"no model defaults, fields omitted", true, loader.Defaults{}, api.SamplingFields{}, 0.8, 0.95, 0, 1, 0, "the fallback"},
		{"model defaults, fields omitted", true, modelDef, api.SamplingFields{}, 0.6, 0.9, 20, 1.1, 0.05, "the model's"},
		{"explicit fields win", true, modelDef, api.SamplingFields{Temperature: f(0.3), TopP: f(0.5), TopK: k(5)}, 0.3, 0.5, 5, 1.1, 0.05, "the request's"},
		{"temperature 0 stays greedy", true, modelDef, api.SamplingFields{Temperature: f(0)}, 0, 0.9, 20, 1.1, 0.05, "greedy"},
		{"no model defaults, temperature 0", true, loader.Defaults{}, api.SamplingFields{Temperature: f(0)}, 0, 0.95, 0, 1, 0, "greedy"},
		{"--generation-config vllm", false, modelDef, api.SamplingFields{}, 1, 1, 0, 1, 0, "OpenAI's and vLLM's"},
	}
	for _, c := range cases {
		s := New(Options{UseModelDefaults: c.useDef})
		st := &state{b: &loader.Bundle{Model: &model.Model{Config: model.Config{Vocab: 16}}, Defaults: c.def}}
		g, e := s.buildGen(st, &c.req, nil, "max_tokens", false, 0)
		if e != nil {
			t.Fatalf("%s: %v", c.name, e)
		}
		p := g.params
		if p.Temperature != c.temp || p.TopP != c.topP || p.TopK != c.topK || p.RepetitionPenalty != c.repPen || p.MinP != c.minP {
			t.Errorf("%s: temperature %v top_p %v top_k %d repetition_penalty %v min_p %v; want %s: %v %v %d %v %v",
				c.name, p.Temperature, p.TopP, p.TopK, p.RepetitionPenalty, p.MinP, c.comment, c.temp, c.topP, c.topK, c.repPen, c.minP)
		}
	}
}
