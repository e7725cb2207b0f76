// This file implements Pipeline: one stage's execution of a Schedule over comm. It walks the
// stage's ops in order: a receive waits for its message (the next one of the same direction is
// posted at once, so it arrives while the stage computes), a forward or backward runs the
// stage's model on the micro-batch's activation slot, a send is asynchronous and is waited for
// only before its buffer is written again. Activations of micro-batch mb live in slot
// mb mod Slots, which is free again by then: micro-batches leave a stage in the order they
// entered it, at most Slots at once (Schedule.PeakInFlight).
package dist

import (
	"errors"
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
)

// Stage is one pipeline stage's model, as the executor drives it. The activation of one
// micro-batch is Rows×Seq×Dim float32s (its length is fixed per pipeline).
type Stage interface {
	// Forward runs a micro-batch in activation slot: the first stage reads tokens, the others
	// in ([Rows·Seq, Dim]); the last stage computes and returns the micro-batch's mean loss
	// against targets, the others return the output activation ([Rows·Seq, Dim]), which must
	// stay valid until the slot's Backward.
	Forward(slot int, tokens, targets []int32, in []float32) (out []float32, loss float32, err error)
	// Backward runs the slot's backward from the gradient of the output dout ([Rows·Seq, Dim];
	// nil on the last stage, which starts from its loss) and returns the gradient of the
	// input ([Rows·Seq, Dim], valid until the next Backward; nil on the first stage).
	Backward(slot int, dout []float32) (din []float32, err error)
}

// Pipeline runs one stage's part of a schedule, batch after batch.
type Pipeline struct {
	Sched  Schedule
	Stage  int // this rank's stage, 0..Sched.Stages-1
	Slots  int // activation slots the stage model must have: Sched.PeakInFlight(Stage)
	links  *Links
	model  Stage
	actLen int // float32s of one micro-batch's activation

	in, dout  [2][]float32 // receive buffers, alternating by micro-batch parity
	gsend     [][]float32  // per slot: the input gradient being sent
	actSend   []*comm.Work // per slot: the activation send in flight
	gradSend  []*comm.Work // per slot: the gradient send in flight
	actRecv   [2]*comm.Work
	gradRecv  [2]*comm.Work
	actBytes  int64 // sent and received in the last Run
	gradBytes int64
}

// NewPipeline prepares stage's execution of sched over links with micro-batch activations of
// actLen float32s. links may be nil only for a one-stage schedule.
func NewPipeline(sched Schedule, stage int, links *Links, model Stage, actLen int) (*Pipeline, error) {
	if stage < 0 || stage >= sched.Stages {
		return nil, fmt.Errorf("dist: stage %d of a %d-stage pipeline", stage, sched.Stages)
	}
	if actLen <= 0 {
		return nil, fmt.Errorf("dist: activation of %d values", actLen)
	}
	if sched.Stages > 1 {
		first, last := stage == 0, stage == sched.Stages-1
		if links == nil || (!first && (links.ActPrev == nil || links.GradPrev == nil)) ||
			(!last && (links.ActNext == nil || links.GradNext == nil)) {
			return nil, fmt.Errorf("dist: stage %d of %d is missing links to its neighbours", stage, sched.Stages)
		}
	}
	p := &Pipeline{Sched: sched, Stage: stage, Slots: sched.PeakInFlight(stage), links: links, model: model, actLen: actLen}
	for i := range 2 {
		p.in[i], p.dout[i] = make([]float32, actLen), make([]float32, actLen)
	}
	p.gsend = make([][]float32, p.Slots)
	for i := range p.gsend {
		p.gsend[i] = make([]float32, actLen)
	}
	p.actSend, p.gradSend = make([]*comm.Work, p.Slots), make([]*comm.Work, p.Slots)
	return p, nil
}

// BubbleFraction is the schedule's idle fraction with equal stage costs.
func (p *Pipeline) BubbleFraction() float64 { return BubbleFraction(p.Sched.Stages, p.Sched.Micro) }

// LastBytes is what the last Run sent plus received: activations and gradients.
func (p *Pipeline) LastBytes() (act, grad int64) { return p.actBytes, p.gradBytes }

// Run executes one batch: batch(mb) gives micro-batch mb's tokens and targets (only the
// first stage uses tokens and only the last targets). It returns the sum of the micro-batches'
// losses on the last stage and 0 elsewhere. The gradients accumulate in the stage model; the
// caller scales them. On error Run closes the links, which ends the operations in flight and
// tells the neighbours, and the pipeline must not be used again.
func (p *Pipeline) Run(batch func(mb int) (tokens, targets []int32)) (lossSum float64, err error) {
	defer func() {
		if err == nil {
			err = p.drain()
		}
		if err != nil && p.links != nil {
			p.links.Close()
		}
	}()
	p.actBytes, p.gradBytes = 0, 0
	outs := make([][]float32, p.Slots)
	var din []float32
	for _, o := range p.Sched.Ops[p.Stage] {
		slot := o.MB % p.Slots
		switch o.Kind {
		case RecvAct:
			if err := p.recv(p.links.ActPrev, &p.actRecv, p.in, o.MB, RecvAct); err != nil {
				return 0, err
			}
		case Forward:
			if err := wait(&p.actSend[slot]); err != nil {
				return 0, fmt.Errorf("dist: stage %d: activation send: %w", p.Stage, err)
			}
			tokens, targets := batch(o.MB)
			out, loss, err := p.model.Forward(slot, tokens, targets, p.in[o.MB%2])
			if err != nil {
				return 0, fmt.Errorf("dist: stage %d forward of micro-batch %d: %w", p.Stage, o.MB, err)
			}
			outs[slot] = out
			lossSum += float64(loss)
		case SendAct:
			if len(outs[slot]) != p.actLen {
				return 0, fmt.Errorf("dist: stage %d: output activation of %d values, want %d", p.Stage, len(outs[slot]), p.actLen)
			}
			p.actSend[slot] = p.links.ActNext.SendAsync(comm.AsBytes(outs[slot]), peer(p.links.ActNext))
			p.actBytes += int64(4 * p.actLen)
		case RecvGrad:
			if err := p.recv(p.links.GradNext, &p.gradRecv, p.dout, o.MB, RecvGrad); err != nil {
				return 0, err
			}
		case Backward:
			var dout []float32
			if p.Stage < p.Sched.Stages-1 {
				dout = p.dout[o.MB%2]
			}
			if din, err = p.model.Backward(slot, dout); err != nil {
				return 0, fmt.Errorf("dist: stage %d backward of micro-batch %d: %w", p.Stage, o.MB, err)
			}
		case SendGrad:
			if err := wait(&p.gradSend[slot]); err != nil {
				return 0, fmt.Errorf("dist: stage %d: gradient send: %w", p.Stage, err)
			}
			if len(din) != p.actLen {
				return 0, fmt.Errorf("dist: stage %d: input gradient of %d values, want %d", p.Stage, len(din), p.actLen)
			}
			copy(p.gsend[slot], din)
			p.gradSend[slot] = p.links.GradPrev.SendAsync(comm.AsBytes(p.gsend[slot]), peer(p.links.GradPrev))
			p.gradBytes += int64(4 * p.actLen)
		}
	}
	if p.Stage < p.Sched.Stages-1 {
		lossSum = 0
	}
	return lossSum, nil
}

// recv completes micro-batch mb's receive on g into bufs[mb%2] (posting it first unless a
// previous call did) and posts mb+1's into the other buffer.
func (p *Pipeline) recv(g *comm.Group, pending *[2]*comm.Work, bufs [2][]float32, mb int, kind OpKind) error {
	if pending[mb%2] == nil {
		pending[mb%2] = g.RecvAsync(comm.AsBytes(bufs[mb%2]), peer(g))
	}
	if err := wait(&pending[mb%2]); err != nil {
		what := "activation"
		if kind == RecvGrad {
			what = "gradient"
		}
		return fmt.Errorf("dist: stage %d: receiving the %s of micro-batch %d: %w", p.Stage, what, mb, err)
	}
	if kind == RecvAct {
		p.actBytes += int64(4 * p.actLen)
	} else {
		p.gradBytes += int64(4 * p.actLen)
	}
	if mb+1 < p.Sched.Micro {
		pending[(mb+1)%2] = g.RecvAsync(comm.AsBytes(bufs[(mb+1)%2]), peer(g))
	}
	return nil
}

// wait waits for *w (if any) and clears it.
func wait(w **comm.Work) error {
	if *w == nil {
		return nil
	}
	err := (*w).Wait()
	*w = nil
	return err
}

// drain waits for every operation still in flight, so no buffer is in use after Run.
func (p *Pipeline) drain() error {
	var errs []error
	for _, ws := range [][]*comm.Work{p.actSend, p.gradSend, p.actRecv[:], p.gradRecv[:]} {
		for i := range ws {
			if err := wait(&ws[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
