// This file binds the Llama family's graph (model.BuildGraph, F32 weights) for training:
// ForModel, with Llama 3's RoPE divisors computed from the configuration as a constant weight.
package trainexec

import (
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// ForModel compiles cfg's graph with its loss and backward for batches of up to maxB x maxT
// tokens over params (every tensor of cfg by its GGUF name; rope_freqs.weight is added from
// cfg.RopeScaling when it applies).
func ForModel(cfg model.Config, params []Param, maxB, maxT int, pool *kernels.Pool) (*Program, error) {
	g, err := model.BuildGraph(&cfg, nil, cfg.RopeScaling != nil)
	if err != nil {
		return nil, err
	}
	if cfg.RopeScaling != nil {
		f, err := kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling)
		if err != nil {
			return nil, err
		}
		params = append(params[:len(params):len(params)], Param{Name: model.RopeFreqsName, W: f})
	}
	return New(g, params, maxB, maxT, pool)
}
