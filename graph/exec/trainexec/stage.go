// This file runs a pipeline stage and recomputation through the one graph: the stage's part
// of the model graph (graph.Cut), differentiated from the loss on the last stage and from the
// next stage's output gradient on the others (graph.GradFrom, with respect to the stage's
// input too), then rewritten by graph.Recompute when asked. Program's stage methods feed the
// input rows and the output gradient and read the output rows and the input gradient.
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// InputGrad is the input holding the gradient of a stage's output (a stage that is not last).
const InputGrad = "d_stage_out"

// stageSpec is the part of a graph a Program runs and how.
type stageSpec struct {
	in, out     string   // the stage's input and output values ("": the whole graph's)
	checkpoints []string // recompute from these values (nil: keep everything)
	tp          Comm     // shard for this rank of the tensor-parallel group (nil: none)
	auxCoef     float64  // weight of the moe layers' mean load-balancing loss (0: none)
}

// stageState is a stage program's input and output values.
type stageState struct {
	in, out, din, seed *graph.Value
}

// forward is the stage's part of fwd with the loss when it ends with the logits.
func (sp stageSpec) forward(fwd *graph.Graph) (*graph.Graph, error) {
	if sp.in != "" || sp.out != "" {
		var err error
		if fwd, err = graph.Cut(fwd, sp.in, sp.out); err != nil {
			return nil, err
		}
	}
	lg := fwd
	if sp.out == "" {
		var err error
		if lg, _, err = graph.WithLoss(fwd, OutputLogits, InputTargets); err != nil {
			return nil, err
		}
		if lg, err = graph.WithMoEAux(lg, sp.auxCoef); err != nil {
			return nil, err
		}
	}
	if sp.tp == nil {
		return lg, nil
	}
	return graph.ShardTP(lg, sp.tp.Rank(), sp.tp.Size())
}

// differentiate returns lg with its backward (w.r.t. wrt and the stage's input, appended) and
// recomputation applied.
func (sp stageSpec) differentiate(lg *graph.Graph, wrt []*graph.Value) (*graph.Graph, []*graph.Value, error) {
	if sp.in != "" {
		wrt = append(wrt[:len(wrt):len(wrt)], lg.Value(sp.in))
	}
	var g *graph.Graph
	var err error
	if sp.out != "" {
		g, err = graph.GradFrom(lg, lg.Outputs[0], InputGrad, wrt)
	} else {
		g, err = graph.Grad(lg, lg.Outputs[0], wrt)
	}
	if err != nil || sp.checkpoints == nil {
		return g, wrt, err
	}
	var cps []string
	for _, name := range sp.checkpoints {
		if g.Value(name) != nil {
			cps = append(cps, name)
		}
	}
	g, _, err = graph.Recompute(g, len(lg.Nodes), cps)
	if err != nil {
		return nil, nil, err
	}
	for i, w := range wrt {
		wrt[i] = g.Value(w.Name)
	}
	return g, wrt, nil
}

// stageInput records v when it is the stage's input rows or output gradient.
func (p *Program) stageInput(v *graph.Value, sp stageSpec) bool {
	switch {
	case sp.in != "" && v.Name == sp.in:
		p.stage.in = v
	case sp.out != "" && v.Name == InputGrad:
		p.stage.seed = v
	default:
		return false
	}
	return true
}

// initStage finds the stage's output and input gradient values once the graph is built.
func (p *Program) initStage(sp stageSpec, nwrt int) {
	if sp.out != "" {
		p.stage.out = p.g.Outputs[0]
	}
	if sp.in != "" {
		p.stage.din = p.g.Outputs[nwrt]
	}
}

// StageForward is Forward for a pipeline stage: a first stage reads tokens, the others in
// (B*T rows of the stage's input, copied); a last stage returns the loss against targets (nil:
// logits only), the others 0. Read a stage's output rows with Output.
func (p *Program) StageForward(tokens, targets []int32, in []float32, B, T int) float32 {
	if p.stage.in != nil {
		p.N = B * T
		copy(p.cur(p.stage.in), in)
	}
	loss := p.Forward(tokens, targets, B, T)
	if p.stage.out != nil {
		p.pending = true
	}
	return loss
}

// Output is a stage's output rows (B*T of them) of the last StageForward (nil on the last
// stage), valid until the next.
func (p *Program) Output() []float32 {
	if p.stage.out == nil {
		return nil
	}
	return p.cur(p.stage.out)
}

// StageBackward is Backward for a pipeline stage: the last stage differentiates scale times
// the mean loss, the others start from dout (the gradient of Output). It returns the gradient
// of the stage's input rows (nil on the first stage), valid until the next StageBackward.
func (p *Program) StageBackward(dout []float32, scale float32) []float32 {
	if p.stage.seed != nil {
		copy(p.cur(p.stage.seed), dout)
	}
	p.scale = scale
	p.Backward()
	p.scale = 1
	if p.stage.din == nil {
		return nil
	}
	return p.cur(p.stage.din)
}

// forModelStage is ForModelWith's stage and recomputation: blocks [lo, hi) of cfg's graph.
func forModelStage(fwd *graph.Graph, layers int, params []Param, maxB, maxT int, pool *kernels.Pool, opt Options, ar *arena) (*Program, error) {
	lo, hi := opt.FirstBlock, opt.EndBlock
	if hi == 0 {
		hi = layers
	}
	if lo < 0 || lo >= hi || hi > layers {
		return nil, fmt.Errorf("trainexec: stage of blocks [%d, %d) of %d", lo, hi, layers)
	}
	sp := stageSpec{auxCoef: opt.MoEAuxCoef}
	if opt.TP != nil && opt.TP.Size() > 1 {
		sp.tp = opt.TP
	}
	if lo > 0 {
		sp.in = model.BlockInput(lo)
	}
	if hi < layers {
		sp.out = model.BlockInput(hi)
	}
	if opt.Recompute {
		for l := lo; l <= hi; l++ {
			sp.checkpoints = append(sp.checkpoints, model.BlockInput(l))
		}
	}
	return build(fwd, params, maxB, maxT, pool, sp, ar)
}
