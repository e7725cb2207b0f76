// This file checks that tensor-parallel training through the graph (graph.ShardTP run by
// trainexec) is the hand-written tensor-parallel layers' training: on TP 2 and 4, tied and
// untied, with Llama 3 RoPE, 20 AdamW steps of two accumulated micro-batches give the same loss
// on every rank, and the losses and each rank's BeforeUse/GradReady calls that the hand-written
// layers gave at main be94aba, recorded in testdata/reference/train_tp_losses.txt (those layers
// are gone: the file cannot be regenerated).
package nn

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

const tpGolden = "train_tp_losses.txt"

type tpGridCase struct {
	name string
	cfg  model.Config
	size int
}

func tpGridCases() []tpGridCase {
	l3 := model.Config{Arch: "llama", Dim: 32, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 48,
		Vocab: 40, CtxLen: 32, RopeTheta: 500000, NormEps: 1e-6,
		RopeScaling: &kernels.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8}}
	return []tpGridCase{
		{"untied-tp2", tpConfig(false), 2}, {"tied-tp2", tpConfig(true), 2},
		{"untied-tp4", tpConfig(false), 4}, {"tied-tp4", tpConfig(true), 4},
		{"llama3rope-tp2", l3, 2},
	}
}

// adamW is a plain AdamW (bias-corrected, decoupled weight decay) over one rank's flat buffers.
type adamW struct {
	m, v []float32
	t    int
}

func (a *adamW) step(w, g []float32, gradScale float32) {
	const lr, b1, b2, eps, wd = 3e-3, 0.9, 0.95, 1e-8, 0.1
	if a.m == nil {
		a.m, a.v = make([]float32, len(w)), make([]float32, len(w))
	}
	a.t++
	c1, c2 := float32(1-math.Pow(b1, float64(a.t))), float32(1-math.Pow(b2, float64(a.t)))
	for i := range w {
		gi := g[i] * gradScale
		a.m[i] = b1*a.m[i] + (1-b1)*gi
		a.v[i] = b2*a.v[i] + (1-b2)*gi*gi
		mh, vh := a.m[i]/c1, a.v[i]/c2
		w[i] -= lr * (mh/(float32(math.Sqrt(float64(vh)))+eps) + wd*w[i])
	}
}

// tpRun is what one training run of a case gives.
type tpRun struct {
	losses []float32  // per step, the mean over the micro-batches (the same on every rank)
	hooks  [][]string // per rank, the hook calls of the first step
}

func runTPGrid(t *testing.T, c tpGridCase) tpRun {
	t.Helper()
	const B, T, steps, accum = 2, 8, 20, 2
	g := newMemGroup(c.size)
	ranks := make([]*Model, c.size)
	run := tpRun{hooks: make([][]string, c.size)}
	var mu sync.Mutex
	record := false
	for r := range ranks {
		opt := Options{TP: memRank{g, r},
			BeforeUse: func(u int, back bool) {
				mu.Lock()
				defer mu.Unlock()
				if record {
					run.hooks[r] = append(run.hooks[r], fmt.Sprintf("use %d %v", u, back))
				}
			},
			GradReady: func(u int) {
				mu.Lock()
				defer mu.Unlock()
				if record {
					run.hooks[r] = append(run.hooks[r], fmt.Sprintf("ready %d", u))
				}
			}}
		m, err := NewWith(c.cfg, B, T, kernels.NewPool(1), opt)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(21)
		ranks[r] = m
	}
	opts := make([]adamW, c.size)
	rng := rand.New(rand.NewPCG(22, 23))
	for s := 0; s < steps; s++ {
		record = s == 0
		stepLoss := make([]float32, c.size)
		onAll(ranks, func(_ int, m *Model) { m.ZeroGrad() })
		for range accum {
			tokens, targets := strideBatch(rng, B, T, c.cfg.Vocab)
			losses := make([]float32, c.size)
			onAll(ranks, func(r int, m *Model) {
				losses[r] = m.Forward(tokens, targets, B, T)
				m.Backward()
			})
			for r := range stepLoss {
				stepLoss[r] += losses[r] / accum
			}
		}
		for r, l := range stepLoss {
			if math.Float32bits(l) != math.Float32bits(stepLoss[0]) {
				t.Fatalf("step %d: rank %d's loss %v, rank 0's %v", s, r, l, stepLoss[0])
			}
		}
		run.losses = append(run.losses, stepLoss[0])
		onAll(ranks, func(r int, m *Model) {
			w, g := m.Flat()
			opts[r].step(w, g, 1.0/accum)
		})
	}
	return run
}

func TestTPGraphMatchesHandWritten(t *testing.T) {
	golden, hooks := readTPGolden(t)
	for _, c := range tpGridCases() {
		t.Run(c.name, func(t *testing.T) {
			graph := runTPGrid(t, c)
			want := golden[c.name]
			if len(want) != len(graph.losses) {
				t.Fatalf("%s has %d losses for %s, want %d", tpGolden, len(want), c.name, len(graph.losses))
			}
			for s, l := range graph.losses {
				if rel := math.Abs(float64(l-want[s])) / math.Abs(float64(want[s])); rel > 1e-6 {
					t.Errorf("step %d: loss %v through the graph, %v recorded hand-written (relative %.2g)", s, l, want[s], rel)
				}
			}
			for r, h := range graph.hooks {
				if d := hookDigest(h); d != hooks[c.name] {
					t.Errorf("rank %d: hook calls %s (%v), the hand-written layers made %q", r, d, h, hooks[c.name])
				}
			}
			if len(graph.hooks[0]) == 0 {
				t.Error("no hook calls recorded")
			}
			t.Logf("losses %.5f -> %.5f", graph.losses[0], graph.losses[len(graph.losses)-1])
		})
	}
}

// readTPGolden reads the recorded losses and hook digests by case.
func readTPGolden(t *testing.T) (losses map[string][]float32, hooks map[string]string) {
	t.Helper()
	losses, hooks = map[string][]float32{}, map[string]string{}
	f, err := os.Open(fixture.Path(t, "reference", tpGolden))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "hooks "); ok {
			name, digest, _ := strings.Cut(rest, " ")
			hooks[name] = digest
			continue
		}
		var name string
		var step int
		var loss float32
		if _, err := fmt.Sscan(line, &name, &step, &loss); err != nil || step != len(losses[name]) {
			t.Fatalf("%s: bad line %q", tpGolden, line)
		}
		losses[name] = append(losses[name], loss)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return losses, hooks
}
