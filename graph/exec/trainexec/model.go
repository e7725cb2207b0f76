// This file binds the Llama family's graph (model.BuildGraph, F32 weights) for training:
// ForModel and ForModelWith, with Llama 3's RoPE divisors computed from the configuration as a
// constant weight, and the transformations of the one graph that training's parallelism and
// memory options are made of (Options).
package trainexec

import (
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// Comm is a tensor-parallel process group as the executor sees it: Size ranks, this process
// being Rank; each reduction is collective (every rank calls it in the same order with
// buffers of the same length) and leaves in x, on every rank, the element-wise sum (maximum)
// of all ranks' x. A non-nil error means the group is broken. train/nn's Comm has the same
// methods.
type Comm interface {
	Rank() int
	Size() int
	AllReduceSum(x []float32) error
	AllReduceMax(x []float32) error
}

// Options are the transformations ForModelWith applies to the model's one graph before
// differentiating and compiling it. The zero value is the whole model on one process.
type Options struct {
	// TP, when not nil and of size > 1, shards the graph Megatron-style over the group:
	// column-parallel q/k/v, gate/up and the vocab-parallel embedding and output split by
	// rows, row-parallel attn_output and ffn_down by columns, with the collectives the
	// splits need (params then bind this rank's shards).
	TP Comm
	// FirstBlock, EndBlock: a pipeline stage holding blocks [FirstBlock, EndBlock) (EndBlock 0:
	// through the last block). A stage without block 0 reads its input rows from the previous
	// stage; one without the last block returns its output rows and has no loss.
	FirstBlock, EndBlock int
	// Recompute keeps only each block's input from the forward and recomputes the block's
	// activations in the backward, just before they are needed.
	Recompute bool
	// MoEAuxCoef weighs the load-balancing loss of a mixture of experts' routers (the mean
	// over its moe layers of graph's moe_aux) added to the loss; 0: none.
	MoEAuxCoef float64
	// Transform, when not nil, rewrites the model's graph before the loss and backward are
	// added (fine-tuning's low-rank adapters: graph.WithLowRank); params bind the weights it adds.
	Transform func(*graph.Graph) (*graph.Graph, error)
}

// ForModel compiles cfg's graph with its loss and backward for batches of up to maxB x maxT
// tokens over params (every trained tensor of cfg by its GGUF name; rope_freqs.weight is added
// from cfg.RopeScaling when it applies, and the tensors cfg itself determines, Phi-3's LongRoPE
// divisors, from ConfigParams: constants, never trained).
func ForModel(cfg model.Config, params []Param, maxB, maxT int, pool *kernels.Pool) (*Program, error) {
	return ForModelWith(cfg, params, maxB, maxT, pool, Options{})
}

// ForModelWith is ForModel with the transformations of opt.
func ForModelWith(cfg model.Config, params []Param, maxB, maxT int, pool *kernels.Pool, opt Options) (*Program, error) {
	return forModelWith(cfg, params, maxB, maxT, pool, opt, nil)
}

func forModelWith(cfg model.Config, params []Param, maxB, maxT int, pool *kernels.Pool, opt Options, ar *arena) (*Program, error) {
	g, err := model.BuildGraph(&cfg, nil, cfg.RopeScaling != nil)
	if err != nil {
		return nil, err
	}
	if opt.Transform != nil {
		if g, err = opt.Transform(g); err != nil {
			return nil, err
		}
	}
	if cfg.RopeScaling != nil {
		f, err := kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling)
		if err != nil {
			return nil, err
		}
		params = append(params[:len(params):len(params)], Param{Name: model.RopeFreqsName, W: f})
	}
	consts, err := ConfigParams(cfg)
	if err != nil {
		return nil, err
	}
	params = append(params[:len(params):len(params)], consts...)
	return forModelStage(g, cfg.Layers, params, maxB, maxT, pool, opt, ar)
}

// ConfigParams are the constant weights cfg's family derives from the configuration
// (model.Family.ConfigTensors: Phi-3's LongRoPE divisors), without gradients.
func ConfigParams(cfg model.Config) ([]Param, error) {
	f := cfg.Family()
	if f == nil || f.ConfigTensors == nil {
		return nil, nil
	}
	var ps []Param
	for _, t := range f.ConfigTensors(&cfg) {
		w, err := t.Float32()
		if err != nil {
			return nil, err
		}
		ps = append(ps, Param{Name: t.Name, W: w})
	}
	return ps, nil
}
