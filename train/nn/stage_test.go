// This file checks pipeline stages in one process: a model split 2 and 3 ways, driven by hand
// in three orders (one slot, each micro-batch forward then backward; GPipe's all forwards then
// all backwards; 1F1B with S−s slots on stage s), passing activations and gradients between
// stages (1F1B also with Recompute), gives the whole model's losses and gradients (bit for
// bit; the tied embedding's, summed over its first- and last-stage copies as the trainer's
// allreduce does, within 1e-6 of its largest entry, the additions being ordered
// differently); the same with 2 stages of 2 tensor-parallel ranks each (within 1e-5). It also
// checks the stage's hooks and the refusal of bad stage input.
package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// stageOp is one step of a stage's schedule: forward or backward of micro-batch mb.
type stageOp struct {
	fwd bool
	mb  int
}

// scheduleOps returns stage s's ops (of S stages, M micro-batches) and its slots.
func scheduleOps(kind string, s, S, M int) (ops []stageOp, slots int) {
	switch kind {
	case "seq": // one micro-batch at a time
		for mb := range M {
			ops = append(ops, stageOp{true, mb}, stageOp{false, mb})
		}
		return ops, 1
	case "gpipe":
		for mb := range M {
			ops = append(ops, stageOp{true, mb})
		}
		for mb := range M {
			ops = append(ops, stageOp{false, mb})
		}
		return ops, M
	}
	warm := min(S-s-1, M) // 1F1B
	for mb := range warm {
		ops = append(ops, stageOp{true, mb})
	}
	for i := range M - warm {
		ops = append(ops, stageOp{true, warm + i}, stageOp{false, i})
	}
	for mb := M - warm; mb < M; mb++ {
		ops = append(ops, stageOp{false, mb})
	}
	return ops, min(S-s, M)
}

// runPipeline drives the stages of split (block boundaries) over the micro-batches in the
// order of kind, with lossScale on the last stage, and returns the stages and the losses.
// Stages are built with opt plus their block range and slots.
func runPipeline(t *testing.T, cfg model.Config, opt Options, whole *Model, split []int, kind string, batches [][2][]int32, B, T int, lossScale float32) ([]*Model, []float32) {
	t.Helper()
	S, M := len(split)-1, len(batches)
	stages := make([]*Model, S)
	ops := make([][]stageOp, S)
	for s := range S {
		var slots int
		ops[s], slots = scheduleOps(kind, s, S, M)
		opt.FirstBlock, opt.EndBlock, opt.Slots = split[s], split[s+1], slots
		m, err := NewWith(cfg, B, T, testPool, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Params() { // the whole model's weights, by name
			i := slices.IndexFunc(whole.Params(), func(q Param) bool { return q.Name == p.Name })
			copy(p.W, whole.Params()[i].W)
		}
		stages[s] = m
	}
	return stages, drivePipeline(t, stages, ops, kind, split, batches, B, T, lossScale)
}

// drivePipeline runs ops[s] on stages[s], passing activations and gradients between them, and
// returns the last stage's losses.
func drivePipeline(t testing.TB, stages []*Model, ops [][]stageOp, kind string, split []int, batches [][2][]int32, B, T int, lossScale float32) []float32 {
	t.Helper()
	S, M := len(stages), len(batches)
	acts := make([][][]float32, S)  // acts[s][mb]: stage s's output of mb
	grads := make([][][]float32, S) // grads[s][mb]: gradient of stage s's input of mb (a copy)
	for s := range S {
		acts[s], grads[s] = make([][]float32, M), make([][]float32, M)
	}
	losses := make([]float32, M)
	next := make([]int, S)
	for done := 0; done < S; {
		progress := false
		for s := range S {
			if next[s] == len(ops[s]) {
				continue
			}
			op, m := ops[s][next[s]], stages[s]
			slot := op.mb % m.Slots()
			if op.fwd {
				var in []float32
				if s > 0 {
					if in = acts[s-1][op.mb]; in == nil {
						continue
					}
				}
				out, loss, err := m.StageForward(slot, batches[op.mb][0], batches[op.mb][1], in, B, T)
				if err != nil {
					t.Fatal(err)
				}
				acts[s][op.mb], losses[op.mb] = out, loss
			} else {
				var dout []float32
				if s < S-1 {
					if dout = grads[s+1][op.mb]; dout == nil {
						continue
					}
				}
				din, err := m.StageBackward(slot, dout, lossScale)
				if err != nil {
					t.Fatal(err)
				}
				grads[s][op.mb] = slices.Clone(din)
			}
			next[s]++
			if next[s] == len(ops[s]) {
				done++
			}
			progress = true
		}
		if !progress {
			t.Fatalf("%s on %v: the hand-driven schedule deadlocked", kind, split)
		}
	}
	return losses
}

func TestStagesMatchWholeModel(t *testing.T) {
	const B, T, M = 2, 5, 4
	const lossScale = 1.0 / M // a power of two: scales every gradient exactly
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		cfg.Layers = 4
		batches := testBatches(cfg, B, T, M)
		wantLoss, whole := flatRun(t, cfg, B, T, batches)
		for _, split := range [][]int{{0, 2, 4}, {0, 1, 3, 4}} {
			for _, kind := range []string{"seq", "gpipe", "1f1b", "1f1b-recompute"} {
				name := fmt.Sprintf("tied=%v split=%v %s", tied, split, kind)
				opt := Options{Recompute: kind == "1f1b-recompute"}
				stages, losses := runPipeline(t, cfg, opt, whole, split, strings.TrimSuffix(kind, "-recompute"), batches, B, T, lossScale)
				if !slices.Equal(losses, wantLoss) {
					t.Errorf("%s: losses %v, whole model %v", name, losses, wantLoss)
				}
				compareStageGrads(t, name, whole, stages, lossScale)
			}
		}
	}
}

// compareStageGrads compares every stage parameter's gradient with lossScale times the whole
// model's; unit 0's copies are summed first.
func compareStageGrads(t *testing.T, name string, whole *Model, stages []*Model, lossScale float32) {
	t.Helper()
	seen := map[string]int{}
	embd := make([]float32, len(whole.Params()[0].G))
	for _, m := range stages {
		for _, p := range m.Params() {
			seen[p.Name]++
			if p.Name == "token_embd.weight" {
				for i, v := range p.G {
					embd[i] += v
				}
				continue
			}
			i := slices.IndexFunc(whole.Params(), func(q Param) bool { return q.Name == p.Name })
			want := whole.Params()[i].G
			for j := range want {
				if p.G[j] != lossScale*want[j] {
					t.Errorf("%s: %s[%d] gradient %g, whole model %g", name, p.Name, j, p.G[j], lossScale*want[j])
					break
				}
			}
		}
	}
	want := whole.Params()[0].G
	var big float64
	for _, v := range want {
		big = max(big, math.Abs(float64(v)))
	}
	for j := range want {
		if d := math.Abs(float64(embd[j] - lossScale*want[j])); d > 1e-6*big*float64(lossScale) {
			t.Errorf("%s: token_embd[%d] gradient %g, whole model %g", name, j, embd[j], lossScale*want[j])
			break
		}
	}
	copies := 1
	if whole.Cfg.Tied && len(stages) > 1 {
		copies = 2
	}
	if seen["token_embd.weight"] != copies || len(seen) != len(whole.Params()) {
		t.Errorf("%s: stages hold %d tensors (token_embd %d times), the whole model %d", name, len(seen), seen["token_embd.weight"], len(whole.Params()))
	}
}

// TestStageHooks checks the hook order of each stage of a tied model split 3 ways.
func TestStageHooks(t *testing.T) {
	cfg := tinyConfig(true)
	cfg.Layers = 4
	f, b, r := byte('f'), byte('b'), byte('r')
	for _, c := range []struct {
		lo, hi int
		want   []hookEvent
	}{
		{0, 1, []hookEvent{{0, f}, {1, f}, {1, b}, {1, r}, {0, b}, {0, r}}},
		{1, 3, []hookEvent{{2, f}, {3, f}, {3, b}, {3, r}, {2, b}, {2, r}}},
		{3, 4, []hookEvent{{4, f}, {5, f}, {0, f}, {5, b}, {0, b}, {5, r}, {0, r}, {4, b}, {4, r}}},
	} {
		var log []hookEvent
		opt := recordHooks(&log)
		opt.FirstBlock, opt.EndBlock = c.lo, c.hi
		m, err := NewWith(cfg, 1, 4, testPool, opt)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		bt := testBatches(cfg, 1, 4, 1)[0]
		in := make([]float32, 4*cfg.Dim)
		if _, _, err := m.StageForward(0, bt[0], bt[1], in, 1, 4); err != nil {
			t.Fatal(err)
		}
		if _, err := m.StageBackward(0, in, 1); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(log, c.want) {
			t.Errorf("stage [%d, %d): hooks called\n%v\nwant\n%v", c.lo, c.hi, log, c.want)
		}
	}
}

func TestStageRefusals(t *testing.T) {
	cfg := tinyConfig(false)
	cfg.Layers = 3
	first, _ := NewWith(cfg, 2, 4, testPool, Options{EndBlock: 1, Slots: 2})
	mid, _ := NewWith(cfg, 2, 4, testPool, Options{FirstBlock: 1, EndBlock: 2})
	last, _ := NewWith(cfg, 2, 4, testPool, Options{FirstBlock: 2})
	tok := []int32{1, 2, 3, 4}
	bad := []int32{1, 2, 99, 4}
	act := make([]float32, 4*cfg.Dim)
	for name, err := range map[string]error{
		"slot":          second(first.StageForward(2, tok, nil, nil, 1, 4)),
		"negative slot": second(first.StageForward(-1, tok, nil, nil, 1, 4)),
		"batch":         second(first.StageForward(0, tok, nil, nil, 3, 4)),
		"token":         second(first.StageForward(0, bad, nil, nil, 1, 4)),
		"short tokens":  second(first.StageForward(0, tok[:3], nil, nil, 1, 4)),
		"short input":   second(mid.StageForward(0, nil, nil, act[:5], 1, 4)),
		"target":        second(last.StageForward(0, nil, bad, act, 1, 4)),
		"no forward":    stageBackwardErr(first, 1, act),
		"no targets":    forwardThenBackward(last, nil, act),
		"short grad":    forwardThenBackwardGrad(mid, act, act[:3]),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := forwardThenBackward(last, tok, act); err != nil {
		t.Errorf("a valid last-stage micro-batch failed: %v", err)
	}
	if _, err := last.StageBackward(0, nil, 1); err == nil {
		t.Error("a second backward of the same forward was accepted")
	}
	// Empty (non-nil) storage for the units a stage does not hold is ignored.
	empty := make([][]float32, cfg.Layers+2)
	for u := range empty {
		empty[u] = []float32{}
	}
	units, _ := Units(cfg, Options{FirstBlock: 1, EndBlock: 2})
	empty[2] = make([]float32, units[2].Size)
	if m, err := NewWith(cfg, 1, 4, testPool, Options{FirstBlock: 1, EndBlock: 2, W: empty}); err != nil {
		t.Errorf("empty storage for units not held: %v", err)
	} else if w, _ := m.Unit(0); w != nil || len(m.Params()) != 9 || &m.Params()[0].W[0] != &empty[2][0] {
		t.Errorf("a middle stage with empty storage for other units holds unit 0 or misplaces its block")
	}
	if fw, _ := NewWith(cfg, 1, 4, testPool, Options{FirstBlock: 1}); !panics(func() { fw.Forward(tok, tok, 1, 4) }) {
		t.Error("Forward on a pipeline stage did not panic")
	}
}

func second[A, B any](_ A, _ B, err error) error { return err }

func stageBackwardErr(m *Model, slot int, dout []float32) error {
	_, err := m.StageBackward(slot, dout, 1)
	return err
}

func forwardThenBackward(last *Model, targets []int32, act []float32) error {
	if _, _, err := last.StageForward(0, nil, targets, act, 1, 4); err != nil {
		return err
	}
	return stageBackwardErr(last, 0, nil)
}

func forwardThenBackwardGrad(m *Model, act, dout []float32) error {
	if _, _, err := m.StageForward(0, nil, nil, act, 1, 4); err != nil {
		return err
	}
	return stageBackwardErr(m, 0, dout)
}

func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// TestStagesWithTP splits a model into 2 pipeline stages of 2 tensor-parallel ranks each
// (goroutines over memGroup, one group per stage) and runs 2 micro-batches with lossScale
// 1/2: every loss and every gradient shard is within 1e-5 (relative to the tensor's largest
// entry) of the whole unsplit model's, the tied embedding's two copies summed.
func TestStagesWithTP(t *testing.T) {
	const B, T, M, TP = 2, 5, 2, 2
	const lossScale = 1.0 / M
	for _, tied := range []bool{true, false} {
		cfg := tpConfig(tied)
		cfg.Layers = 4
		batches := testBatches(cfg, B, T, M)
		wantLoss, whole := flatRun(t, cfg, B, T, batches)
		wholeParam := func(name string) Param {
			return whole.Params()[slices.IndexFunc(whole.Params(), func(q Param) bool { return q.Name == name })]
		}
		split := []int{0, 2, 4}
		S := len(split) - 1
		stages := make([][]*Model, S)
		for s := range S {
			g := newMemGroup(TP)
			for r := range TP {
				m, err := NewWith(cfg, B, T, kernels.NewPool(1), Options{TP: memRank{g, r}, FirstBlock: split[s], EndBlock: split[s+1]})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range m.Params() {
					Shard(p.W, wholeParam(p.Name).W, p.Name, cfg.Shapes()[p.Name], r, TP)
				}
				stages[s] = append(stages[s], m)
			}
		}
		for mb, bt := range batches {
			acts, losses := make([][]float32, TP), make([]float32, TP)
			for s := range S {
				onAll(stages[s], func(r int, m *Model) {
					out, loss, err := m.StageForward(0, bt[0], bt[1], acts[r], B, T)
					if err != nil {
						t.Error(err)
					}
					acts[r], losses[r] = out, loss
				})
			}
			for r, l := range losses {
				if d := math.Abs(float64(l - wantLoss[mb])); d > 1e-5*float64(wantLoss[mb]) {
					t.Errorf("tied=%v micro-batch %d TP rank %d: loss %v, whole model %v", tied, mb, r, l, wantLoss[mb])
				}
			}
			grads := make([][]float32, TP)
			for s := S - 1; s >= 0; s-- {
				onAll(stages[s], func(r int, m *Model) {
					din, err := m.StageBackward(0, grads[r], lossScale)
					if err != nil {
						t.Error(err)
					}
					grads[r] = slices.Clone(din)
				})
			}
		}
		for r := range TP {
			got := map[string][]float32{}
			for s := range S {
				for _, p := range stages[s][r].Params() {
					if g, ok := got[p.Name]; ok { // the tied embedding's second copy
						for i, v := range p.G {
							g[i] += v
						}
						continue
					}
					got[p.Name] = slices.Clone(p.G)
				}
			}
			for name, g := range got {
				full := wholeParam(name).G
				want := make([]float32, len(g))
				Shard(want, full, name, cfg.Shapes()[name], r, TP)
				for i := range want {
					want[i] *= lossScale
				}
				if d := maxRelDiff(g, want); d > 1e-5 {
					t.Errorf("tied=%v TP rank %d: %s gradient differs by %.2g relative", tied, r, name, d)
				}
			}
			if len(got) != len(whole.Params()) {
				t.Errorf("tied=%v TP rank %d: stages hold %d tensors, the whole model %d", tied, r, len(got), len(whole.Params()))
			}
		}
	}
}
