// This file checks that pipeline stages, activation slots and recomputation through the graph
// train exactly as the hand-written layers did: 20 AdamW steps of 4 micro-batches on a tiny
// model (tied and untied) for each schedule the stage tests cover, every loss and the hook calls
// compared with those the hand-written layers gave at main be94aba, recorded in
// testdata/graph_losses.golden (those layers are gone: the file cannot be regenerated).
package nn

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"testing"
)

const goldenLosses = "testdata/graph_losses.golden"

// equivCase is a stage split (block boundaries), a schedule and recomputation.
type equivCase struct {
	tied      bool
	split     []int
	kind      string // seq, gpipe, 1f1b
	recompute bool
}

func (c equivCase) String() string {
	return fmt.Sprintf("tied=%v split=%v %s recompute=%v", c.tied, c.split, c.kind, c.recompute)
}

func equivCases() []equivCase {
	var cs []equivCase
	for _, tied := range []bool{true, false} {
		cs = append(cs, equivCase{tied, []int{0, 4}, "seq", false}, equivCase{tied, []int{0, 4}, "seq", true},
			equivCase{tied, []int{0, 4}, "gpipe", false}, equivCase{tied, []int{0, 4}, "gpipe", true})
		for _, split := range [][]int{{0, 2, 4}, {0, 1, 3, 4}} {
			for _, kind := range []string{"gpipe", "1f1b"} {
				for _, rc := range []bool{false, true} {
					cs = append(cs, equivCase{tied, split, kind, rc})
				}
			}
		}
	}
	return cs
}

// trainStages runs steps AdamW steps of c over the batches (the micro-batches of every step)
// and returns every micro-batch's loss.
func trainStages(t *testing.T, c equivCase, steps int) ([]float32, []hookEvent) {
	const B, T = 2, 5
	cfg := tinyConfig(c.tied)
	cfg.Layers = 4
	S, M := len(c.split)-1, 4
	batches := testBatches(cfg, B, T, M)
	stages := make([]*Model, S)
	ops := make([][]stageOp, S)
	var log []hookEvent // every stage's hook calls, in the order the schedule makes them
	for s := range S {
		var slots int
		ops[s], slots = scheduleOps(c.kind, s, S, M)
		opt := recordHooks(&log)
		opt.FirstBlock, opt.EndBlock, opt.Slots, opt.Recompute = c.split[s], c.split[s+1], slots, c.recompute
		m, err := NewWith(cfg, B, T, testPool, opt)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(3)
		stages[s] = m
	}
	opts := make([][]*adamState, S)
	for s, m := range stages {
		for _, p := range m.Params() {
			opts[s] = append(opts[s], &adamState{m: make([]float32, len(p.W)), v: make([]float32, len(p.W))})
		}
	}
	var losses []float32
	for step := 1; step <= steps; step++ {
		for _, m := range stages {
			m.ZeroGrad()
		}
		losses = append(losses, drivePipeline(t, stages, ops, c.kind, c.split, batches, B, T, 1.0/float32(M))...)
		if c.tied && S > 1 { // the trainer's allreduce of the embedding's two copies
			a, b := stages[0].Params()[0].G, stages[S-1].Params()[0].G
			for i := range a {
				a[i] += b[i]
				b[i] = a[i]
			}
		}
		for s, m := range stages {
			for i, p := range m.Params() {
				opts[s][i].step(p.W, p.G, step, len(p.Shape) > 1)
			}
		}
		// Rotate the micro-batches so steps differ.
		batches = append(batches[1:], batches[0])
	}
	return losses, log
}

// adamState is AdamW's moments for one tensor (lr 1e-2, betas 0.9/0.95, eps 1e-8, weight
// decay 0.1 on matrices), in float32 as the trainer's.
type adamState struct{ m, v []float32 }

func (a *adamState) step(w, g []float32, t int, decay bool) {
	const lr, b1, b2, eps, wd = 1e-2, 0.9, 0.95, 1e-8, 0.1
	c1 := float32(1 - math.Pow(b1, float64(t)))
	c2 := float32(1 - math.Pow(b2, float64(t)))
	for i := range w {
		a.m[i] = b1*a.m[i] + (1-b1)*g[i]
		a.v[i] = b2*a.v[i] + (1-b2)*g[i]*g[i]
		u := (a.m[i] / c1) / (float32(math.Sqrt(float64(a.v[i]/c2))) + eps)
		if decay {
			u += wd * w[i]
		}
		w[i] -= lr * u
	}
}

func TestGraphTrainsLikeHandWritten(t *testing.T) {
	const steps = 20
	golden, hooks := readGolden(t)
	for _, c := range equivCases() {
		got, log := trainStages(t, c, steps)
		if got[len(got)-1] >= got[0] {
			t.Errorf("%v: training did not lower the loss: %v -> %v", c, got[0], got[len(got)-1])
		}
		want, ok := golden[c.String()]
		if !ok || len(want) != len(got) {
			t.Errorf("%v: %d golden losses for %d micro-batches", c, len(want), len(got))
			continue
		}
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Abs(float64(want[i])) {
				t.Errorf("%v: loss %d is %v, the hand-written layers gave %v", c, i, got[i], want[i])
				break
			}
		}
		events := make([]string, len(log))
		for i, e := range log {
			events[i] = fmt.Sprintf("%d%c", e.unit, e.kind)
		}
		if d := hookDigest(events); d != hooks[c.String()] {
			t.Errorf("%v: hook calls %s, the hand-written layers made %q", c, d, hooks[c.String()])
		}
	}
}

// hookDigest is "<number of calls> <FNV-1a 64 of the calls, one per line>".
func hookDigest(calls []string) string {
	h := fnv.New64a()
	for _, c := range calls {
		h.Write([]byte(c + "\n"))
	}
	return fmt.Sprintf("%d %016x", len(calls), h.Sum64())
}

// readGolden reads the golden file: "case: bits bits ..." (float32 bits of the losses) and
// "hooks case: digest", by case; "#" starts a comment line.
func readGolden(t *testing.T) (losses map[string][]float32, hooks map[string]string) {
	t.Helper()
	f, err := os.Open(goldenLosses)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	losses, hooks = map[string][]float32{}, map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		name, bits, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			t.Fatalf("golden line %q", sc.Text())
		}
		if c, ok := strings.CutPrefix(name, "hooks "); ok {
			hooks[c] = strings.TrimSpace(bits)
			continue
		}
		for _, b := range strings.Fields(bits) {
			var u uint32
			if _, err := fmt.Sscanf(b, "%x", &u); err != nil {
				t.Fatal(err)
			}
			losses[name] = append(losses[name], math.Float32frombits(u))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return losses, hooks
}
