// This file checks and simulates pipeline schedules without tensors: Validate checks each
// stage's list (every micro-batch forwarded and backwarded exactly once, receives before use,
// sends after the data exists), and Simulate runs all stages against each other with sends that
// never block and receives that wait, as the executor does over comm, reporting a deadlock or an
// out-of-order message instead of hanging, and the time each stage spends idle.
package dist

import (
	"fmt"
	"strings"
)

// Validate checks every stage's operations on their own: each micro-batch is forwarded and
// (unless the schedule is forwards only) backwarded exactly once, its input is received (stages > 0) before the forward, its output
// sent (stages < last) after it, its output gradient received (stages < last) before the
// backward, which follows the forward, and its input gradient sent (stages > 0) after it.
func (s Schedule) Validate() error {
	if len(s.Ops) != s.Stages {
		return fmt.Errorf("dist: schedule has %d stage lists for %d stages", len(s.Ops), s.Stages)
	}
	for st, ops := range s.Ops {
		first, last := st == 0, st == s.Stages-1
		done := make([][6]int, s.Micro) // count of each op kind per micro-batch
		for i, o := range ops {
			if o.MB < 0 || o.MB >= s.Micro || int(o.Kind) >= len(opNames) {
				return fmt.Errorf("dist: stage %d op %d: bad op %v", st, i, o)
			}
			d := &done[o.MB]
			bad := func(why string) error {
				return fmt.Errorf("dist: stage %d op %d (%v): %s", st, i, o, why)
			}
			if d[o.Kind] > 0 {
				return bad("repeated")
			}
			switch o.Kind {
			case RecvAct:
				if first {
					return bad("the first stage receives no activation")
				}
			case Forward:
				if !first && d[RecvAct] == 0 {
					return bad("input not received yet")
				}
			case SendAct:
				if last {
					return bad("the last stage sends no activation")
				}
				if d[Forward] == 0 {
					return bad("not forwarded yet")
				}
			case RecvGrad:
				if last {
					return bad("the last stage receives no gradient")
				}
			case Backward:
				if d[Forward] == 0 {
					return bad("not forwarded yet")
				}
				if !last && d[RecvGrad] == 0 {
					return bad("output gradient not received yet")
				}
			case SendGrad:
				if first {
					return bad("the first stage sends no gradient")
				}
				if d[Backward] == 0 {
					return bad("not backwarded yet")
				}
			}
			d[o.Kind]++
		}
		for mb, d := range done {
			want := [6]int{1, 1, 1, 1, 1, 1}
			if first {
				want[RecvAct], want[SendGrad] = 0, 0
			}
			if last {
				want[SendAct], want[RecvGrad] = 0, 0
			}
			if s.Name == ScheduleForward {
				want[RecvGrad], want[Backward], want[SendGrad] = 0, 0, 0
			}
			if d != want {
				return fmt.Errorf("dist: stage %d micro-batch %d: op counts %v, want %v (ra F sa rg B sg)", st, mb, d, want)
			}
		}
	}
	_, err := s.Simulate(1, 1)
	return err
}

// SimResult is the outcome of Simulate.
type SimResult struct {
	Makespan float64   // time when the last stage finished
	Busy     []float64 // per stage: time spent in forwards and backwards
	Bubble   float64   // idle fraction: 1 - sum(Busy)/(Stages·Makespan)
}

type simMsg struct {
	mb   int
	time float64
}

// Simulate runs the schedule with a forward costing fwd and a backward bwd time units on every
// stage and free communication: a send enqueues at once, a receive waits for the matching
// message, which must be the oldest one on its link. It returns an error naming each stage's
// blocked operation if the stages deadlock.
func (s Schedule) Simulate(fwd, bwd float64) (SimResult, error) {
	n := s.Stages
	acts := make([][]simMsg, n)  // acts[st]: activations in flight from st-1 to st
	grads := make([][]simMsg, n) // grads[st]: gradients in flight from st+1 to st
	pc := make([]int, n)
	clock := make([]float64, n)
	res := SimResult{Busy: make([]float64, n)}
	recv := func(q *[]simMsg, st int, o Op) (bool, error) {
		if len(*q) == 0 {
			return false, nil
		}
		m := (*q)[0]
		if m.mb != o.MB {
			return false, fmt.Errorf("dist: stage %d op %v: next message on the link is micro-batch %d", st, o, m.mb)
		}
		*q = (*q)[1:]
		clock[st] = max(clock[st], m.time)
		return true, nil
	}
	for {
		progress, finished := false, true
		for st := range n {
			for pc[st] < len(s.Ops[st]) {
				o := s.Ops[st][pc[st]]
				ok := true
				var err error
				switch o.Kind {
				case RecvAct:
					ok, err = recv(&acts[st], st, o)
				case RecvGrad:
					ok, err = recv(&grads[st], st, o)
				case SendAct:
					acts[st+1] = append(acts[st+1], simMsg{o.MB, clock[st]})
				case SendGrad:
					grads[st-1] = append(grads[st-1], simMsg{o.MB, clock[st]})
				case Forward:
					clock[st] += fwd
					res.Busy[st] += fwd
				case Backward:
					clock[st] += bwd
					res.Busy[st] += bwd
				}
				if err != nil {
					return res, err
				}
				if !ok {
					break
				}
				pc[st]++
				progress = true
			}
			finished = finished && pc[st] == len(s.Ops[st])
		}
		if finished {
			break
		}
		if !progress {
			var b strings.Builder
			for st := range n {
				if pc[st] < len(s.Ops[st]) {
					fmt.Fprintf(&b, " stage %d at %v;", st, s.Ops[st][pc[st]])
				}
			}
			return res, fmt.Errorf("dist: schedule %s deadlocks:%s", s.Name, strings.TrimSuffix(b.String(), ";"))
		}
	}
	busy := 0.0
	for st := range n {
		res.Makespan = max(res.Makespan, clock[st])
		busy += res.Busy[st]
	}
	if res.Makespan > 0 {
		res.Bubble = 1 - busy/(float64(n)*res.Makespan)
	}
	return res, nil
}
