// This file implements the trainer's pipeline-parallel step (PP > 1): this rank's stage of the
// model (blocks [s·L/PP, (s+1)·L/PP), the embedding on the first stage, the head and loss on
// the last), its schedule (train/dist: 1F1B or naive) over links to the neighbouring stages,
// the sum of a tied embedding's gradient between the first and last stage (Megatron-LM's
// embedding group), and the loss, which only the last stage computes, broadcast to every stage
// for logging. Scales: each micro-batch's loss is the mean over its rows and its gradient is
// scaled by 1/M, so a stage's gradient is that of the mean loss over its data-parallel share,
// as one process computes it on the whole share. The gradient norm (parallel.go) and the
// checkpoint (shards.go) count each tensor once, on the stage that owns it (pipeStage.owns).
package train

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train/dist"
	"github.com/llmcloud/llmcloud/train/nn"
)

// pipeStage is this rank's part of a pipeline: where it sits and how it runs.
type pipeStage struct {
	stage, stages int
	micro         int // micro-batches per batch (M)
	mbRows        int // rows per micro-batch: the data-parallel share / M
	lo, hi        int // blocks held
	sched         dist.Schedule
	links         *dist.Links
	run           *dist.Pipeline // training: the schedule
	eval          *dist.Pipeline // validation: forwards only
	net           *nnStage
}

// stageBlocks is the block range of stage s of stages over layers blocks: [s·L/P, (s+1)·L/P).
func stageBlocks(s, stages, layers int) (lo, hi int) {
	return s * layers / stages, (s + 1) * layers / stages
}

// newPipeStage plans this rank's stage (before the model is built): the block range, the
// micro-batch split of rows and the schedule.
func newPipeStage(cfg Config, grid dist.Grid, coord dist.Coord, rows int) (*pipeStage, error) {
	micro := cfg.MicroBatches
	if micro == 0 {
		micro = grid.PP
	}
	if rows%micro != 0 {
		return nil, fmt.Errorf("train: the %d rows of each data-parallel rank (--batch %d / dp %d) do not split into --micro-batches %d",
			rows, cfg.Batch, grid.DP, micro)
	}
	sched, err := dist.NewSchedule(cfg.PPSchedule, grid.PP, micro)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	lo, hi := stageBlocks(coord.PP, grid.PP, cfg.Layers)
	return &pipeStage{stage: coord.PP, stages: grid.PP, micro: micro, mbRows: rows / micro, lo: lo, hi: hi, sched: sched}, nil
}

// netOptions adds the stage's blocks and activation slots to opt.
func (p *pipeStage) netOptions(opt nn.Options) nn.Options {
	opt.FirstBlock, opt.EndBlock, opt.Slots = p.lo, p.hi, p.sched.PeakInFlight(p.stage)
	return opt
}

// owns reports whether the stage owns tensor name in the checkpoint and the gradient norm:
// every tensor it holds but the last stage's copy of a tied token_embd.
func (p *pipeStage) owns(name string) bool { return p.stage == 0 || name != "token_embd.weight" }

// start connects the stage to its neighbours (collective over the world: every rank calls
// it in the same order) and prepares the training and validation executions.
func (p *pipeStage) start(t *Trainer, mesh *dist.Mesh) error {
	links, err := dist.NewLinks(mesh.World, mesh.Grid.PPGroups())
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	p.links = links
	p.net = &nnStage{m: t.Net, rows: p.mbRows, seq: t.Cfg.Seq, scale: 1 / float32(p.micro)}
	actLen := p.mbRows * t.Cfg.Seq * t.Model.Dim
	if p.run, err = dist.NewPipeline(p.sched, p.stage, links, p.net, actLen); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fwd, err := dist.NewSchedule(dist.ScheduleForward, p.stages, p.micro)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if p.eval, err = dist.NewPipeline(fwd, p.stage, links, p.net, actLen); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	t.log.Info("pipeline stage", "stage", p.stage, "stages", p.stages, "blocks", fmt.Sprintf("[%d, %d)", p.lo, p.hi),
		"schedule", p.sched.Name, "micro_batches", p.micro, "micro_batch_rows", p.mbRows,
		"activation_slots", p.run.Slots, "bubble", fmt.Sprintf("%.3f", p.run.BubbleFraction()))
	return nil
}

// close releases the links.
func (p *pipeStage) close() {
	if p.links != nil {
		p.links.Close()
	}
}

// batch returns the micro-batch function over this rank's rows of x and y.
func (p *pipeStage) batch(x, y []int32, seq int) func(mb int) ([]int32, []int32) {
	return func(mb int) ([]int32, []int32) {
		a, b := mb*p.mbRows*seq, (mb+1)*p.mbRows*seq
		return x[a:b], y[a:b]
	}
}

// stepPipeline is Step for PP > 1.
func (t *Trainer) stepPipeline(start time.Time) (StepStats, error) {
	c, p, mesh := &t.Cfg, t.par.pipe, t.par.mesh
	t.par.beginStep(t.Net)
	var lossSum float64
	for range c.GradAccum {
		t.data.Train.Next(t.x, t.y)
		x, y := t.par.myRows(t.x, c.Seq), t.par.myRows(t.y, c.Seq)
		l, err := p.run.Run(p.batch(x, y, c.Seq))
		if err != nil {
			return StepStats{}, fmt.Errorf("train: step %d: %w", t.step+1, err)
		}
		lossSum += l / float64(p.micro)
	}
	loss := t.injected(lossSum / float64(c.GradAccum))
	if err := t.reduceTiedEmbedding(); err != nil {
		return StepStats{}, err
	}
	if err := t.par.finishGrads(); err != nil {
		return StepStats{}, err
	}
	if err := dist.MeanScalars(t.par.dpGroup(), &loss); err != nil {
		return StepStats{}, err
	}
	if err := broadcastFloat(mesh.PP, &loss, p.stages-1); err != nil {
		return StepStats{}, fmt.Errorf("train: loss broadcast: %w", err)
	}
	lr := c.LRAt(t.step)
	h := Hyper{LR: lr, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps,
		WeightDecay: c.WeightDecay, GradScale: 1 / float32(c.GradAccum*t.par.grid.DP), Clip: c.Clip}
	norm, err := t.par.gradNorm(t.opt, h.GradScale) // over the stages (attach's norm parts)
	if err != nil {
		return StepStats{}, err
	}
	if why := nonFinite(loss, norm); why != "" {
		return t.skipStep(start, loss, lr, norm, why), nil
	}
	if why := t.spike.check(t.step+1, norm); why != "" {
		return t.skipStep(start, loss, lr, norm, why), nil
	}
	if err := t.par.update(t.opt, h, norm); err != nil {
		return StepStats{}, err
	}
	return t.endStep(start, loss, lr, norm), nil
}

// evalPipeline is Eval's loss for PP > 1: forwards only, the loss broadcast from the last stage.
func (t *Trainer) evalPipeline() (float64, error) {
	c, p := &t.Cfg, t.par.pipe
	var sum float64
	for range c.EvalBatches {
		t.data.Val.Next(t.x, t.y)
		l, err := p.eval.Run(p.batch(t.par.myRows(t.x, c.Seq), t.par.myRows(t.y, c.Seq), c.Seq))
		if err != nil {
			return 0, fmt.Errorf("train: validation: %w", err)
		}
		sum += l / float64(p.micro)
	}
	loss := sum / float64(c.EvalBatches)
	if err := dist.MeanScalars(t.par.dpGroup(), &loss); err != nil {
		return 0, err
	}
	if err := broadcastFloat(t.par.mesh.PP, &loss, p.stages-1); err != nil {
		return 0, fmt.Errorf("train: validation loss broadcast: %w", err)
	}
	return loss, nil
}

// reduceTiedEmbedding sums token_embd's gradient over the first and last stage when the
// output matrix is tied to it: both hold a copy (the last only for the output projection),
// both must apply the gradient of both uses.
func (t *Trainer) reduceTiedEmbedding() error {
	emb := t.par.mesh.Embd
	if !t.Model.Tied || emb == nil {
		return nil
	}
	_, g := t.Net.Unit(0)
	if err := emb.AllReduce(g, comm.Sum); err != nil {
		return fmt.Errorf("train: tied embedding gradient allreduce: %w", err)
	}
	return nil
}

// broadcastFloat sets *x on every rank of g to root's value.
func broadcastFloat(g *comm.Group, x *float64, root int) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(*x))
	if err := g.Broadcast(b[:], root); err != nil {
		return err
	}
	*x = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	return nil
}

// nnStage drives an nn stage model for dist.Pipeline: micro-batches of rows x seq tokens, the
// last stage's loss gradient scaled by scale (1/M).
type nnStage struct {
	m         *nn.Model
	rows, seq int
	scale     float32
}

func (s *nnStage) Forward(slot int, tokens, targets []int32, in []float32) ([]float32, float32, error) {
	return s.m.StageForward(slot, tokens, targets, in, s.rows, s.seq)
}

func (s *nnStage) Backward(slot int, dout []float32) ([]float32, error) {
	return s.m.StageBackward(slot, dout, s.scale)
}
