// This file implements pipeline schedules as data: for PP stages and M micro-batches, the
// sequence of operations each stage runs (receive an activation, forward, send it on, receive
// a gradient, backward, send it back). Two schedules: the naive GPipe one (all forwards, then all
// backwards; Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021, Megatron-LM's
// non-interleaved schedule: PP-stage-1 warm-up forwards, then one forward and one backward in
// turn, then the cool-down backwards). Both have the same bubble, (PP-1)/(M+PP-1) of the time,
// but 1F1B keeps at most min(PP-stage, M) micro-batches' activations alive on a stage instead of
// M. Nothing here touches a tensor or a socket: the executor (pipeline_exec.go) walks these ops.
package dist

import (
	"fmt"
	"strconv"
	"strings"
)

// OpKind is what one pipeline operation does.
type OpKind uint8

const (
	RecvAct  OpKind = iota // receive micro-batch MB's input activation from the previous stage
	Forward                // run the stage's forward on micro-batch MB (keeps its activations)
	SendAct                // send MB's output activation to the next stage
	RecvGrad               // receive the gradient of MB's output from the next stage
	Backward               // run the stage's backward on MB (frees its activations)
	SendGrad               // send the gradient of MB's input to the previous stage
)

var opNames = [...]string{RecvAct: "ra", Forward: "F", SendAct: "sa", RecvGrad: "rg", Backward: "B", SendGrad: "sg"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "op" + strconv.Itoa(int(k))
}

// Op is one step of a stage's schedule.
type Op struct {
	Kind OpKind
	MB   int // micro-batch index, 0..M-1
}

func (o Op) String() string { return o.Kind.String() + strconv.Itoa(o.MB) }

// Schedule names accepted by NewSchedule (Config.PPSchedule).
const (
	Schedule1F1B  = "1f1b"
	ScheduleNaive = "naive"
	// ScheduleForward is forwards only (validation): no backward, so no activations are kept.
	ScheduleForward = "forward"
)

// Schedule is the list of operations of every stage of one pipeline for one batch.
type Schedule struct {
	Name   string
	Stages int    // PP
	Micro  int    // M, micro-batches per batch
	Ops    [][]Op // [Stages][...] in the order the stage runs them
}

// NewSchedule builds the named schedule ("1f1b" or "naive"; "" means 1f1b).
func NewSchedule(name string, stages, micro int) (Schedule, error) {
	if stages < 1 || micro < 1 {
		return Schedule{}, fmt.Errorf("dist: pipeline needs at least 1 stage and 1 micro-batch, got %d stages, %d micro-batches", stages, micro)
	}
	s := Schedule{Name: name, Stages: stages, Micro: micro, Ops: make([][]Op, stages)}
	switch name {
	case "", Schedule1F1B:
		s.Name = Schedule1F1B
		for st := range stages {
			s.Ops[st] = oneFOneB(st, stages, micro)
		}
	case ScheduleNaive:
		for st := range stages {
			s.Ops[st] = naive(st, stages, micro)
		}
	case ScheduleForward:
		for st := range stages {
			for mb := range micro {
				s.Ops[st] = forwardOps(s.Ops[st], st, stages, mb)
			}
		}
	default:
		return Schedule{}, fmt.Errorf("dist: unknown pipeline schedule %q (want %q, %q or %q)", name, Schedule1F1B, ScheduleNaive, ScheduleForward)
	}
	return s, nil
}

// forwardOps appends the receive, forward and send of micro-batch mb on stage st.
func forwardOps(ops []Op, st, stages, mb int) []Op {
	if st > 0 {
		ops = append(ops, Op{RecvAct, mb})
	}
	ops = append(ops, Op{Forward, mb})
	if st < stages-1 {
		ops = append(ops, Op{SendAct, mb})
	}
	return ops
}

// backwardOps appends the receive, backward and send of micro-batch mb on stage st.
func backwardOps(ops []Op, st, stages, mb int) []Op {
	if st < stages-1 {
		ops = append(ops, Op{RecvGrad, mb})
	}
	ops = append(ops, Op{Backward, mb})
	if st > 0 {
		ops = append(ops, Op{SendGrad, mb})
	}
	return ops
}

// naive is GPipe's schedule on stage st: every forward, then every backward.
func naive(st, stages, micro int) []Op {
	var ops []Op
	for mb := range micro {
		ops = forwardOps(ops, st, stages, mb)
	}
	for mb := range micro {
		ops = backwardOps(ops, st, stages, mb)
	}
	return ops
}

// oneFOneB is the 1F1B schedule on stage st: min(stages-st-1, micro) warm-up forwards, then
// for each remaining micro-batch one forward and the backward of the oldest one in flight, then
// the cool-down backwards.
func oneFOneB(st, stages, micro int) []Op {
	warm := min(stages-st-1, micro)
	var ops []Op
	for mb := range warm {
		ops = forwardOps(ops, st, stages, mb)
	}
	for i := range micro - warm {
		ops = forwardOps(ops, st, stages, warm+i)
		ops = backwardOps(ops, st, stages, i)
	}
	for mb := micro - warm; mb < micro; mb++ {
		ops = backwardOps(ops, st, stages, mb)
	}
	return ops
}

// BubbleFraction is the idle fraction of a pipeline of PP stages over M micro-batches with equal
// stage costs: (PP-1)/(M+PP-1), the same for 1F1B and naive.
func BubbleFraction(stages, micro int) float64 {
	return float64(stages-1) / float64(micro+stages-1)
}

// PeakInFlight is the most micro-batches whose activations stage st holds at once (forwarded,
// not yet backwarded): min(PP-st, M) for 1F1B, M for naive, 1 for forwards only (nothing is
// kept for a backward; the one slot is reused).
func (s Schedule) PeakInFlight(st int) int {
	if s.Name == ScheduleForward {
		return 1
	}
	live, peak := 0, 0
	for _, o := range s.Ops[st] {
		switch o.Kind {
		case Forward:
			live++
			peak = max(peak, live)
		case Backward:
			live--
		}
	}
	return peak
}

// String prints one line per stage, e.g. "stage 0: F0 sa0 F1 sa1 rg0 B0 ...".
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d stages, %d micro-batches, bubble %.3f\n", s.Name, s.Stages, s.Micro, BubbleFraction(s.Stages, s.Micro))
	for st, ops := range s.Ops {
		fmt.Fprintf(&b, "stage %d:", st)
		for _, o := range ops {
			b.WriteByte(' ')
			b.WriteString(o.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}
