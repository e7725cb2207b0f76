// This file implements Trainer: the model, the optimizer and the data loaders of one run, one
// optimizer step (GradAccum forward/backward passes, then AdamW), validation, and saving and
// restoring the whole state so a resumed run continues bit for bit.
package train

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/dist"
	"github.com/llmcloud/llmcloud/train/nn"
)

// Batches is a stream of training windows: Next fills x and y ([B*T] each, y is x shifted by
// one token) and advances; Position is how far the stream has advanced, and SetPosition returns to
// such a position. data.Loader implements it.
type Batches interface {
	Next(x, y []int32)
	Position() int64
	SetPosition(pos int64) error
	Epoch() int
}

// Data is what a run trains on.
type Data struct {
	Train         Batches
	Val           Batches // nil: no validation
	Vocab         int     // vocabulary size of the tokens
	TokenizerPath string  // tokenizer.json of the tokens ("" = none; exports then have no vocabulary)
	// Adapter, when not nil, trains low-rank adapters on its frozen base instead of every
	// weight (fine-tuning; nn.Options.Adapter).
	Adapter *nn.Adapter
}

// StepStats describe one optimizer step.
type StepStats struct {
	Step     int     // 1-based number of the step just taken
	Loss     float32 // mean training loss over its micro-batches
	LR       float64
	GradNorm float64 // global L2 norm before clipping
	// AuxLoss is a mixture of experts' mean unweighted load-balancing loss (E·Σ_e f_e·P_e per
	// moe layer; experts-used when the load is even) over the step's micro-batches; the loss
	// differentiated is Loss + MoEAuxCoef·AuxLoss. 0 for a dense model.
	AuxLoss  float32
	Tokens   int64 // training tokens consumed so far
	Duration time.Duration
	// Skipped names why the step's update was skipped ("" = taken): its loss or gradient norm
	// was NaN or infinite. The step still counts and its data is consumed.
	Skipped string
}

// Trainer runs one training run.
type Trainer struct {
	Cfg   Config
	Model model.Config
	Net   *nn.Model

	data    Data
	opt     *AdamW
	pool    *kernels.Pool
	rng     *rand.PCG
	step    int
	tokens  int64
	elapsed time.Duration // training wall time, including earlier runs of a resumed run
	last    float32
	x, y    []int32 // [Batch*Seq]: the global micro-batch (every rank reads the same window)
	log     *slog.Logger

	par *parallel // this rank's part of a distributed run (a 1x1x1 grid in one process)

	injectNaN func(step int) bool // test hook: make this 1-based step's loss NaN (nil: never)
	spike     *spikeGuard         // loss-spike test (spike.go; nil: off)
}

// New builds the model and optimizer for cfg on d and initializes the weights from cfg.Seed:
// the one-process run (NewParallel with no world).
func New(cfg Config, d Data, log *slog.Logger) (*Trainer, error) {
	return NewParallel(cfg, d, log, nil)
}

// newLocal builds the model of this rank's part (par) and the optimizer.
func newLocal(cfg Config, d Data, log *slog.Logger, par *parallel) (*Trainer, error) {
	if d.Train == nil || d.Vocab <= 0 {
		return nil, errors.New("train: no training data")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mc := cfg.ModelConfig(d.Vocab)
	if err := mc.Validate(); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	pool := kernels.NewPool(cfg.Threads)
	opt, maxRows := nn.Options{TP: dist.TPComm(par.tpGroup()), Recompute: cfg.Recompute, MoEAuxCoef: cfg.MoEAuxCoef}, par.rows
	if par.pipe != nil {
		opt, maxRows = par.pipe.netOptions(opt), par.pipe.mbRows
	}
	opt.Adapter = d.Adapter
	if err := par.prepare(cfg, mc, &opt); err != nil {
		return nil, err
	}
	net, err := nn.NewWith(mc, maxRows, cfg.Seq, pool, opt)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t := &Trainer{Cfg: cfg, Model: mc, Net: net, data: d, pool: pool, log: log, par: par,
		rng: rand.NewPCG(cfg.Seed, 0x6c6c6d636c6f7564), // stream: "llmcloud"
		x:   make([]int32, cfg.Batch*cfg.Seq), y: make([]int32, cfg.Batch*cfg.Seq)}
	if err := par.attach(t, rand.New(t.rng).Uint64()); err != nil {
		return nil, err
	}
	if t.injectNaN, err = nanHookFromEnv(); err != nil {
		return nil, err
	}
	t.spike = newSpikeGuard(&cfg)
	if err := t.setupPrecision(); err != nil {
		return nil, err
	}
	return t, nil
}

// paramSpans locates each parameter in the flat buffer; 1-D parameters (norm gains, biases)
// get no weight decay.
func paramSpans(net *nn.Model) []span {
	w, _ := net.Flat()
	var out []span
	for _, p := range net.Params() {
		if len(p.W) == 0 {
			continue
		}
		lo := offsetIn(w, p.W)
		out = append(out, span{lo: lo, hi: lo + len(p.W), decay: len(p.Shape) >= 2})
	}
	return out
}

// offsetIn is the index of sub's first element in the buffer buf it is a view of.
func offsetIn(buf, sub []float32) int {
	d := uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	i := int(d / 4)
	if d%4 != 0 || i < 0 || i+len(sub) > len(buf) || &buf[i] != &sub[0] {
		panic("train: a parameter is not a view of the model's flat buffer")
	}
	return i
}

// StepNum is the number of optimizer steps taken.
func (t *Trainer) StepNum() int { return t.step }

// Tokens is the number of training tokens consumed.
func (t *Trainer) Tokens() int64 { return t.tokens }

// Elapsed is the training wall time so far, including earlier runs a resumed run continues.
func (t *Trainer) Elapsed() time.Duration { return t.elapsed }

// Step takes one optimizer step. In a distributed run every rank calls it; a failed
// collective (a rank died or timed out) is returned as an error and the trainer must not be
// stepped again.
func (t *Trainer) Step() (st StepStats, err error) {
	defer nn.CatchComm(&err) // a tensor-parallel collective failed inside Forward/Backward
	start := time.Now()
	if t.par.pipe != nil {
		return t.stepPipeline(start)
	}
	c := &t.Cfg
	t.syncBF16()
	t.par.beginStep(t.Net)
	var lossSum, auxSum float64
	for i := range c.GradAccum {
		// LoRA dropout's masks: one per step, micro-batch and data-parallel rank.
		t.Net.SetDropout(true, c.Seed, (uint64(t.step)*uint64(c.GradAccum)+uint64(i))<<16|uint64(t.Rank()))
		t.data.Train.Next(t.x, t.y)
		if err := t.setDocs(t.data.Train); err != nil {
			return StepStats{}, err
		}
		x, y := t.par.myRows(t.x, c.Seq), t.par.myRows(t.y, c.Seq)
		lossSum += float64(t.Net.Forward(x, y, t.par.rows, c.Seq))
		auxSum += float64(t.Net.AuxLoss())
		t.par.beginBackward(i == c.GradAccum-1)
		t.Net.Backward()
		t.par.endBackward()
	}
	loss := t.injectSpike(t.injected(lossSum / float64(c.GradAccum)))
	if err := t.par.finishGrads(); err != nil {
		return StepStats{}, err
	}
	aux := auxSum / float64(c.GradAccum)
	if err := dist.MeanScalars(t.par.dpGroup(), &loss, &aux); err != nil {
		return StepStats{}, err
	}
	lr := c.LRAt(t.step)
	h := Hyper{LR: lr, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps,
		WeightDecay: c.WeightDecay, GradScale: 1 / float32(c.GradAccum*t.par.grid.DP), Clip: c.Clip}
	norm, err := t.par.gradNorm(t.opt, h.GradScale)
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
	st = t.endStep(start, loss, lr, norm)
	st.AuxLoss = float32(aux)
	return st, nil
}

// endStep counts the step just taken and describes it.
func (t *Trainer) endStep(start time.Time, loss, lr, norm float64) StepStats {
	t.step++
	t.tokens += t.Cfg.TokensPerStep()
	t.last = float32(loss)
	d := time.Since(start)
	t.elapsed += d
	return StepStats{Step: t.step, Loss: t.last, LR: lr, GradNorm: norm, Tokens: t.tokens, Duration: d}
}

// Eval returns the mean validation loss over the first EvalBatches validation batches (the
// same batches every time) and its perplexity. ok is false without validation data.
func (t *Trainer) Eval() (loss, ppl float64, ok bool, err error) {
	defer nn.CatchComm(&err)
	v := t.data.Val
	if v == nil {
		return 0, 0, false, nil
	}
	if err := v.SetPosition(0); err != nil {
		return 0, 0, false, fmt.Errorf("train: validation: %w", err)
	}
	if t.par.pipe != nil {
		loss, err := t.evalPipeline()
		if err != nil {
			return 0, 0, false, err
		}
		return loss, math.Exp(loss), true, nil
	}
	c := &t.Cfg
	t.syncBF16()
	t.Net.SetDropout(false, 0, 0)
	var sum float64
	for range c.EvalBatches {
		v.Next(t.x, t.y)
		if err := t.setDocs(v); err != nil {
			return 0, 0, false, err
		}
		sum += float64(t.Net.Forward(t.par.myRows(t.x, c.Seq), t.par.myRows(t.y, c.Seq), t.par.rows, c.Seq))
	}
	loss = sum / float64(c.EvalBatches)
	if err := dist.MeanScalars(t.par.dpGroup(), &loss); err != nil {
		return 0, 0, false, err
	}
	return loss, math.Exp(loss), true, nil
}

// state is the trainer's state as written to a checkpoint: the full tensors, gathered onto
// rank 0 (nil tensors elsewhere).
func (t *Trainer) state() (*State, []namedF32, error) {
	rng, err := t.rng.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	st := &State{Version: CheckpointVersion, Step: t.step, Tokens: t.tokens,
		LoaderPosition: t.data.Train.Position(), LoaderEpoch: t.data.Train.Epoch(), RNG: rng,
		AdamStep: t.opt.T, ElapsedSeconds: t.elapsed.Seconds(), TrainLoss: t.last,
		Config: t.Cfg, Model: t.Model, Adapter: t.Net.Adapted()}
	if t.spike != nil {
		st.SpikeNorms = t.spike.norms
	}
	ts, err := t.gather(t.stateParts(true))
	if err != nil {
		return nil, nil, err
	}
	return st, ts, nil
}

// Save writes a checkpoint of the current state under the run directory and returns its
// directory. In a distributed run every rank calls it and rank 0 writes (the others return "").
func (t *Trainer) Save() (string, error) {
	if t.Cfg.Out == "" {
		return "", errors.New("train: no run directory (--out) to save a checkpoint in")
	}
	st, ts, err := t.state()
	if err != nil {
		return "", fmt.Errorf("train: checkpoint: %w", err)
	}
	if !t.par.writes() {
		return "", nil // rank 0 writes the checkpoint of the whole run
	}
	return writeCheckpoint(t.Cfg.Out, st, ts, t.data.TokenizerPath)
}

// Restore loads ck's weights, optimizer moments, step, loader position and RNG state. The
// checkpoint's model must be the trainer's model.
func (t *Trainer) Restore(ck *Checkpoint) error {
	if ck.State.Model != t.Model {
		return fmt.Errorf("train: checkpoint %s has model %+v, this run builds %+v", ck.Dir, ck.State.Model, t.Model)
	}
	for _, p := range t.stateParts(true) {
		src, ok := ck.Tensors[p.name]
		if !ok || len(src) != product(p.shape) {
			return fmt.Errorf("train: checkpoint %s: %s missing or of the wrong size", ck.Dir, p.name)
		}
		p.take(src)
	}
	if z := t.par.zero; z != nil && z.Stage == 3 {
		z.WeightsChanged() // the gathered units are stale
	}
	if err := t.rng.UnmarshalBinary(ck.State.RNG); err != nil {
		return fmt.Errorf("train: checkpoint %s: rng: %w", ck.Dir, err)
	}
	if err := t.data.Train.SetPosition(ck.State.LoaderPosition); err != nil {
		return fmt.Errorf("train: checkpoint %s: %w", ck.Dir, err)
	}
	t.opt.T = ck.State.AdamStep
	if t.spike != nil {
		t.spike.norms = append([]float64(nil), ck.State.SpikeNorms...)
	}
	t.step, t.tokens, t.last = ck.State.Step, ck.State.Tokens, ck.State.TrainLoss
	t.elapsed = time.Duration(ck.State.ElapsedSeconds * float64(time.Second))
	return nil
}
