// Tests of the pipeline executor over real comm groups (TCP, ranks as goroutines of the test
// process): every schedule on 2-4 stages must give exactly the gradients and losses of running
// the same stages one after another in one goroutine. The stages here are small elementwise
// affine maps so the test checks the executor alone (slots, buffers, message order, async
// sends); train/step_pipeline_test.go checks the real model in real processes.
package dist

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/prometheus/client_golang/prometheus"
)

// localWorld joins n ranks of one job, each in its own goroutine, over TCP on 127.0.0.1.
func localWorld(t *testing.T, n int) []*comm.Group {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	gs := make([]*comm.Group, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := comm.DefaultOptions()
			opts.Timeout = 30 * time.Second
			env := comm.Env{Rank: r, WorldSize: n, LocalRank: r, MasterAddr: "127.0.0.1", MasterPort: port}
			gs[r], errs[r] = comm.Init(env, opts, nil, prometheus.NewRegistry())
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() { onEveryRank(n, func(r int) error { return gs[r].Close() }) })
	return gs
}

// onEveryRank runs fn(r) on every rank at once and returns their errors.
func onEveryRank(n int, fn func(r int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = fn(r) }()
	}
	wg.Wait()
	return errs
}

// affineStage is out = a⊙x + b on [n] vectors; the first stage's x is the tokens scaled into
// [0, 1) and repeated dim times, the last stage's loss is mean(½(out - target)²).
type affineStage struct {
	first, last bool
	dim         int
	a, b        []float32 // parameters [n]
	ga, gb      []float32 // their gradients
	x, out      [][]float32
	tgt         [][]int32
	din         []float32
}

func newAffineStage(st, stages, n, dim, slots int) *affineStage {
	s := &affineStage{first: st == 0, last: st == stages-1, dim: dim, a: make([]float32, n), b: make([]float32, n),
		ga: make([]float32, n), gb: make([]float32, n), din: make([]float32, n)}
	for i := range n {
		s.a[i] = 0.5 + float32((i*7+st*3)%11)/10
		s.b[i] = float32((i*5+st)%13)/13 - 0.5
	}
	for range slots {
		s.x, s.out, s.tgt = append(s.x, make([]float32, n)), append(s.out, make([]float32, n)), append(s.tgt, nil)
	}
	return s
}

func (s *affineStage) Forward(slot int, tokens, targets []int32, in []float32) ([]float32, float32, error) {
	x := s.x[slot]
	if s.first {
		for i := range x {
			x[i] = float32(tokens[i/s.dim]%17) / 17
		}
	} else {
		copy(x, in)
	}
	for i := range x {
		s.out[slot][i] = s.a[i]*x[i] + s.b[i]
	}
	if !s.last {
		return s.out[slot], 0, nil
	}
	s.tgt[slot] = targets
	var loss float64
	for i, o := range s.out[slot] {
		d := float64(o - float32(targets[i/s.dim]%17)/17)
		loss += d * d / 2
	}
	return nil, float32(loss / float64(len(x))), nil
}

func (s *affineStage) Backward(slot int, dout []float32) ([]float32, error) {
	x, n := s.x[slot], len(s.x[slot])
	for i := range x {
		d := float32(0)
		if s.last {
			d = (s.out[slot][i] - float32(s.tgt[slot][i/s.dim]%17)/17) / float32(n)
		} else {
			d = dout[i]
		}
		s.ga[i] += d * x[i]
		s.gb[i] += d
		s.din[i] = d * s.a[i]
	}
	if s.first {
		return nil, nil
	}
	return s.din, nil
}

func TestPipelineMatchesSequential(t *testing.T) {
	const rows, dim, micro = 3, 5, 6
	tokens := make([][]int32, micro)
	targets := make([][]int32, micro)
	for mb := range micro {
		for i := range rows {
			tokens[mb] = append(tokens[mb], int32(mb*31+i*7))
			targets[mb] = append(targets[mb], int32(mb*13+i*5+1))
		}
	}
	batch := func(mb int) ([]int32, []int32) { return tokens[mb], targets[mb] }
	n := rows * dim
	for _, stages := range []int{2, 3, 4} {
		// The reference: every micro-batch through all stages, then back, in one goroutine.
		ref := make([]*affineStage, stages)
		for st := range ref {
			ref[st] = newAffineStage(st, stages, n, dim, 1)
		}
		var refLoss float64
		for i := range 2 * micro { // two steps, as below
			mb := i % micro
			var act []float32
			for st, s := range ref {
				out, loss, _ := s.Forward(0, tokens[mb], targets[mb], act)
				act = out
				if st == stages-1 && i < micro {
					refLoss += float64(loss)
				}
			}
			var g []float32
			for st := stages - 1; st >= 0; st-- {
				g, _ = ref[st].Backward(0, g)
			}
		}
		world := localWorld(t, stages)
		pipe := make([]int, stages)
		for i := range pipe {
			pipe[i] = i
		}
		links := make([]*Links, stages)
		if errs := onEveryRank(stages, func(r int) (err error) {
			links[r], err = NewLinks(world[r], [][]int{pipe})
			return err
		}); errs[0] != nil || errs[stages-1] != nil {
			t.Fatal(errs)
		}
		for _, name := range []string{Schedule1F1B, ScheduleNaive} {
			t.Run(fmt.Sprintf("pp%d/%s", stages, name), func(t *testing.T) {
				sched, err := NewSchedule(name, stages, micro)
				if err != nil {
					t.Fatal(err)
				}
				models := make([]*affineStage, stages)
				losses := make([]float64, stages)
				for step := range 2 { // twice: buffers and links are reused
					errs := onEveryRank(stages, func(r int) error {
						if step == 0 {
							models[r] = newAffineStage(r, stages, n, dim, sched.PeakInFlight(r))
						}
						p, err := NewPipeline(sched, r, links[r], models[r], n)
						if err != nil {
							return err
						}
						losses[r], err = p.Run(batch)
						return err
					})
					for r, err := range errs {
						if err != nil {
							t.Fatalf("rank %d: %v", r, err)
						}
					}
				}
				if losses[stages-1] != refLoss {
					t.Errorf("last stage loss sum %v, sequential %v", losses[stages-1], refLoss)
				}
				for st := range stages {
					if st < stages-1 && losses[st] != 0 {
						t.Errorf("stage %d returned loss %v, want 0", st, losses[st])
					}
					for i := range n {
						// bit for bit: every stage adds its micro-batches in the same order
						if models[st].ga[i] != ref[st].ga[i] || models[st].gb[i] != ref[st].gb[i] {
							t.Fatalf("stage %d grad[%d]: (%v, %v), sequential (%v, %v)", st, i,
								models[st].ga[i], models[st].gb[i], ref[st].ga[i], ref[st].gb[i])
						}
					}
				}
			})
		}
		onEveryRank(stages, func(r int) error { links[r].Close(); return nil })
	}
}

// failAt makes a stage's forward of one micro-batch fail.
type failAt struct {
	*affineStage
	mb, calls int
}

func (f *failAt) Forward(slot int, tokens, targets []int32, in []float32) ([]float32, float32, error) {
	f.calls++
	if f.calls-1 == f.mb {
		return nil, 0, fmt.Errorf("injected failure")
	}
	return f.affineStage.Forward(slot, tokens, targets, in)
}

// A stage whose model fails must make every stage's Run return an error, not hang.
func TestPipelineStageErrorReachesEveryStage(t *testing.T) {
	const stages, micro, n = 3, 4, 8
	world := localWorld(t, stages)
	sched, _ := NewSchedule(Schedule1F1B, stages, micro)
	errs := onEveryRank(stages, func(r int) error {
		l, err := NewLinks(world[r], [][]int{{0, 1, 2}})
		if err != nil {
			return err
		}
		defer l.Close()
		var m Stage = newAffineStage(r, stages, n, 1, sched.PeakInFlight(r))
		if r == 1 {
			m = &failAt{affineStage: m.(*affineStage), mb: 2}
		}
		p, err := NewPipeline(sched, r, l, m, n)
		if err != nil {
			return err
		}
		_, err = p.Run(func(mb int) ([]int32, []int32) { return make([]int32, n), make([]int32, n) })
		return err
	})
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d: no error", r)
		} else {
			t.Logf("rank %d: %v", r, err)
		}
	}
}
