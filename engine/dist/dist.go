// Package dist runs the serving engine's model over the ranks of a serving group
// (docs/distributed-serving.md): PP pipeline stages of TP tensor-parallel ranks (Layout).
// Rank 0 runs the engine: its model (model.LoadGGUFPart, one rank's part) calls the Leader
// before every forward, which broadcasts the batch on a control group; every other rank runs
// Work, which receives each batch and runs the same forward over its own part and paged KV
// cache, the graph's all-reduces and the logits' all-gather pairing up across the stage's
// tensor-parallel group, the residual stream passed from stage to stage and the logits from
// the last stage back to rank 0. Rank 0 alone samples.
//
// Idle, rank 0 pings the ranks every PingInterval (a broadcast then a barrier), so a rank
// that died or hangs is found within the collective timeout even without traffic; the
// Leader then reports it on Failed, every later forward fails at once, and the server exits.
package dist

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
	"github.com/prometheus/client_golang/prometheus"
)

// PingInterval is how often an idle rank 0 checks that every rank is alive.
const PingInterval = time.Second

// Layout is the shape of a serving group: PP pipeline stages of TP tensor-parallel ranks each,
// rank r in stage r/TP as its tensor-parallel rank r%TP. Rank 0 (stage 0) runs the engine.
type Layout struct{ TP, PP int }

func (l Layout) stage(rank int) int  { return rank / l.TP }
func (l Layout) tpRank(rank int) int { return rank % l.TP }

// Ranks is this process's membership of a serving group: the world group (activations between
// stages), the tensor-parallel group of its stage, which the sharded model's collectives run
// on (the world itself without a pipeline), and a control group of all ranks for the steps,
// so rank 0's pings never interleave with a forward's collectives.
type Ranks struct {
	World  *comm.Group
	TP     *comm.Group // nil when Layout.TP is 1
	Layout Layout
	// ExpertParallel splits a mixture of experts by expert over each stage's tensor-parallel
	// ranks (model.Part.ExpertParallel); every rank must agree (Setup checks it).
	ExpertParallel bool
	// Partition are the layers of each pipeline stage (model.Part.Partition; nil: equal
	// stages); every rank must agree (Setup checks it).
	Partition []int
	ctrl      *comm.Group
	// back carries the logits from the last stage's first rank to rank 0 (with a pipeline;
	// nil on the other ranks), a group of its own so rank 0 receives them while it sends the
	// next micro-batch's activations on World.
	back *comm.Group
}

// Part is the model part this rank serves.
func (r *Ranks) Part() model.Part {
	p := model.Part{Stage: r.Layout.stage(r.World.Rank()), Stages: r.Layout.PP, ExpertParallel: r.ExpertParallel, Partition: r.Partition}
	if r.TP != nil {
		p.TP = r.TP
	}
	return p
}

// Join joins the group env describes (comm.Init: rank 0 serves the rendezvous on
// env.MasterAddr:MasterPort) with every collective bounded by timeout; env.WorldSize must be
// l.TP·l.PP.
func Join(env comm.Env, l Layout, timeout time.Duration, log *slog.Logger) (*Ranks, error) {
	return JoinWith(env, l, timeout, log, prometheus.NewRegistry())
}

// JoinWith is Join with the collectives' metrics (comm: llmcloud_ccl_collectives_total and
// llmcloud_ccl_collective_seconds, by op) registered on reg.
func JoinWith(env comm.Env, l Layout, timeout time.Duration, log *slog.Logger, reg prometheus.Registerer) (*Ranks, error) {
	if l.TP < 1 || l.PP < 1 || l.TP*l.PP != env.WorldSize {
		return nil, fmt.Errorf("dist: %d ranks are not %d tensor-parallel x %d pipeline stages", env.WorldSize, l.TP, l.PP)
	}
	opts := comm.DefaultOptions()
	if timeout > 0 {
		opts.Timeout = timeout
	}
	w, err := comm.Init(env, opts, log, reg)
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d: %w", env.Rank, env.WorldSize, err)
	}
	all := make([]int, env.WorldSize)
	for i := range all {
		all[i] = i
	}
	ctrl, err := w.NewGroup(all)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("rank %d of %d: control group: %w", env.Rank, env.WorldSize, err)
	}
	r := &Ranks{World: w, Layout: l, ctrl: ctrl}
	switch {
	case l.TP == 1:
	case l.PP == 1:
		r.TP = w
	default:
		for s := range l.PP { // every rank makes every stage's group, in the same order
			ranks := make([]int, l.TP)
			for i := range ranks {
				ranks[i] = s*l.TP + i
			}
			g, err := w.NewGroup(ranks)
			if err != nil {
				w.Close()
				return nil, fmt.Errorf("rank %d of %d: stage %d's tensor-parallel group: %w", env.Rank, env.WorldSize, s, err)
			}
			if g != nil {
				r.TP = g
			}
		}
	}
	if l.PP > 1 {
		if r.back, err = w.NewGroup([]int{0, (l.PP - 1) * l.TP}); err != nil {
			w.Close()
			return nil, fmt.Errorf("rank %d of %d: the logits' group: %w", env.Rank, env.WorldSize, err)
		}
	}
	return r, nil
}

// Close leaves the group (the control group first).
func (r *Ranks) Close() error {
	if r.back != nil {
		r.back.Close()
	}
	r.ctrl.Close()
	return r.World.Close()
}

// Setup is what every rank must agree on before the first step: the KV pool's shape (rank
// 0's engine sizes it, the others follow) and the model's, checked on arrival.
type Setup struct {
	NumBlocks, BlockSize int
	KVDType              string
	Invariant            bool  // the engine's batch invariance (model.Batch.Invariant), every rank's
	ExpertParallel       bool  // rank 0's Ranks.ExpertParallel, which every rank's must equal
	Partition            []int // rank 0's Ranks.Partition, the same
	// Shape: layers, dim, heads, KV heads, head dim, feed-forward width, vocabulary.
	Shape [7]int
}

func (s Setup) encode() []byte {
	b := make([]byte, 0, 64)
	inv := 0 // flags: 1 batch invariance, 2 expert parallelism
	if s.Invariant {
		inv = 1
	}
	if s.ExpertParallel {
		inv |= 2
	}
	for _, v := range append([]int{s.NumBlocks, s.BlockSize, inv}, s.Shape[:]...) {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s.Partition)))
	for _, n := range s.Partition {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
	}
	return append(b, s.KVDType...)
}

func decodeSetup(b []byte) (Setup, error) {
	var s Setup
	if len(b) < 11*8 {
		return s, fmt.Errorf("dist: setup message of %d bytes", len(b))
	}
	v := func(i int) int { return int(binary.LittleEndian.Uint64(b[8*i:])) }
	s.NumBlocks, s.BlockSize, s.Invariant, s.ExpertParallel = v(0), v(1), v(2)&1 != 0, v(2)&2 != 0
	for i := range s.Shape {
		s.Shape[i] = v(3 + i)
	}
	n := v(10)
	if n < 0 || n > (len(b)-11*8)/8 {
		return s, fmt.Errorf("dist: setup message: a partition of %d stages in %d bytes", n, len(b))
	}
	for i := range n {
		s.Partition = append(s.Partition, v(11+i))
	}
	s.KVDType = string(b[(11+n)*8:])
	return s, nil
}

// header is one control message's first part.
func header(kind, n int, step uint64) []byte {
	h := make([]byte, headerBytes)
	binary.LittleEndian.PutUint32(h, uint32(kind))
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	binary.LittleEndian.PutUint64(h[8:], step)
	return h
}

// sender is rank 0's side of the control group: one message at a time.
type sender struct {
	mu   sync.Mutex
	ctrl *comm.Group
	step uint64
	last time.Time
}

// send broadcasts a header and body; a ping is followed by a barrier (every rank answers).
func (s *sender) send(kind int, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendLocked(kind, body)
}

func (s *sender) sendLocked(kind int, body []byte) error {
	if kind == msgStep {
		s.step++
	}
	if err := s.ctrl.Broadcast(header(kind, len(body), s.step), 0); err != nil {
		return err
	}
	if len(body) > 0 {
		if err := s.ctrl.Broadcast(body, 0); err != nil {
			return err
		}
	}
	if kind == msgPing {
		if err := s.ctrl.Barrier(); err != nil {
			return err
		}
	}
	s.last = time.Now()
	return nil
}
