// This file is rank 0's side: the Leader hooks the model's forward (model.Model.OnForward)
// to broadcast every batch, pings idle ranks, and reports the first failure.
package dist

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
)

// Leader is rank 0 of a serving group.
type Leader struct {
	r      *Ranks
	m      *model.Model
	s      sender
	log    *slog.Logger
	buf    []byte
	failed chan struct{}
	once   sync.Once
	err    error
	stop   chan struct{}
	done   chan struct{}

	weights []RankWeights // what each rank measured of its weights at setup
}

// NewLeader sends setup to the other ranks, makes m (rank 0's shard, the engine's model)
// broadcast every batch before running it, and starts pinging. Close it before closing r.
func NewLeader(r *Ranks, m *model.Model, setup Setup, log *slog.Logger) (*Leader, error) {
	if r.World.Rank() != 0 {
		return nil, fmt.Errorf("dist: the leader is rank 0, this is rank %d", r.World.Rank())
	}
	l := &Leader{r: r, m: m, s: sender{ctrl: r.ctrl}, log: log, failed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	setup.Shape = shapeOf(m)
	setup.ExpertParallel, setup.Partition = r.ExpertParallel, r.Partition
	if err := l.s.send(msgHello, setup.encode()); err != nil {
		return nil, fmt.Errorf("dist: setup: %w", err)
	}
	var err error
	if l.weights, err = gatherWeights(r.ctrl, m); err != nil {
		return nil, err
	}
	m.OnForward = l.forward
	if r.Layout.PP > 1 {
		m.Pipe = stagePipe{l}
	}
	go l.pinger()
	return l, nil
}

// shapeOf is the model's shape as Setup carries it.
func shapeOf(m *model.Model) [7]int {
	c := &m.Config
	return [7]int{c.Layers, c.Dim, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab}
}

// forward is m.OnForward: the batch to every rank, which run it with rank 0.
func (l *Leader) forward(seqs []model.BatchSeq) error {
	select {
	case <-l.failed:
		return l.err
	default:
	}
	l.s.mu.Lock()
	l.buf = encodePlan(l.buf[:0], seqs)
	err := l.s.sendLocked(msgStep, l.buf)
	l.s.mu.Unlock()
	if err != nil {
		l.fail(err)
		return l.err
	}
	return nil
}

// stagePipe is m.Pipe: rank 0's stage output to the next stage's rank 0 on World, the logits
// back from the last stage's on their own group (Ranks.back), so the two run at once.
type stagePipe struct{ l *Leader }

func (p stagePipe) Send(out []float32, _ []model.BatchSeq) error {
	l := p.l
	if err := l.Err(); err != nil {
		return err
	}
	if err := l.r.World.Send(comm.AsBytes(out), l.r.Layout.TP); err != nil {
		l.fail(err)
		return l.err
	}
	return nil
}

func (p stagePipe) Recv(dst []float32, _ []model.BatchSeq) error {
	l := p.l
	if err := l.Err(); err != nil {
		return err
	}
	if err := l.r.back.Recv(comm.AsBytes(dst), 1); err != nil {
		l.fail(err)
		return l.err
	}
	return nil
}

// Weights are every rank's weight bytes as the ranks measured them at setup (index: rank).
func (l *Leader) Weights() []RankWeights { return l.weights }

// Fail records err (a failed forward's collective, say) as the group's failure.
func (l *Leader) Fail(err error) { l.fail(err) }

func (l *Leader) fail(err error) {
	l.once.Do(func() {
		l.err = fmt.Errorf("tensor-parallel group of %d ranks failed: %w", l.r.World.Size(), err)
		l.log.Error("tensor-parallel group failed", "err", err)
		close(l.failed)
	})
}

// Failed is closed when the group has failed (Err says how): a rank died, hung past the
// collective timeout, or aborted.
func (l *Leader) Failed() <-chan struct{} { return l.failed }

// Err is the group's failure, nil while it works.
func (l *Leader) Err() error {
	select {
	case <-l.failed:
		return l.err
	default:
		return nil
	}
}

// pinger pings every rank when no message went out for PingInterval.
func (l *Leader) pinger() {
	defer close(l.done)
	t := time.NewTicker(PingInterval / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.failed:
			return
		case <-t.C:
		}
		l.s.mu.Lock()
		var err error
		if time.Since(l.s.last) >= PingInterval {
			err = l.s.sendLocked(msgPing, nil)
		}
		l.s.mu.Unlock()
		if err != nil {
			l.fail(err)
			return
		}
	}
}

// Close tells the other ranks to exit (when the group still works) and stops pinging; m no
// longer broadcasts.
func (l *Leader) Close() error {
	close(l.stop)
	<-l.done
	l.m.OnForward, l.m.Pipe = nil, nil
	if l.Err() != nil {
		return l.Err()
	}
	return l.s.send(msgStop, nil)
}
