// Tests of tensor parallelism in the executor: TP=2 ranks (goroutines over an in-memory group)
// running ForModelWith's sharded programs give the unsplit program's loss and, each, its shard
// of every gradient (1e-5 relative: the sums are split differently); a failing group panics
// with a *CommError naming the reduction.
package trainexec_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// group is an in-memory tensor-parallel group: every reduction waits for all ranks, reduces in
// rank order, and hands every rank the result.
type group struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int
	bufs [][]float32
	n    int
	gen  int
}

type rank struct {
	g *group
	r int
}

func (r rank) Rank() int                      { return r.r }
func (r rank) Size() int                      { return r.g.size }
func (r rank) AllReduceSum(x []float32) error { r.g.reduce(r.r, x, false); return nil }
func (r rank) AllReduceMax(x []float32) error { r.g.reduce(r.r, x, true); return nil }

func (g *group) reduce(r int, x []float32, isMax bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.bufs[r], g.n = x, g.n+1
	if gen := g.gen; g.n < g.size {
		for g.gen == gen {
			g.cond.Wait()
		}
		return
	}
	out := append([]float32(nil), g.bufs[0]...)
	for _, b := range g.bufs[1:] {
		for i, v := range b {
			if isMax {
				out[i] = max(out[i], v)
			} else {
				out[i] += v
			}
		}
	}
	for _, b := range g.bufs {
		copy(b, out)
	}
	g.n, g.gen = 0, g.gen+1
	g.cond.Broadcast()
}

func TestTPMatchesUnsplit(t *testing.T) {
	const B, T, TP = 2, 7, 2
	untied := tinyConfigs()["mha-untied"] // with Llama 3 RoPE
	untied.Heads, untied.KVHeads, untied.HeadDim, untied.Vocab = 4, 2, 12, 72
	cfgs := map[string]model.Config{"gqa-tied": tinyConfigs()["gqa-tied"], "gqa-untied-llama3rope": untied}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			pool := kernels.NewPool(1)
			_, prog, full := newPair(t, cfg, B, T, pool)
			tok, tgt := batch(rand.New(rand.NewPCG(3, 4)), cfg.Vocab, B*T)
			want := prog.Forward(tok, tgt, B, T)
			prog.Backward()
			shapes := cfg.Shapes()
			g := &group{size: TP, bufs: make([][]float32, TP)}
			g.cond = sync.NewCond(&g.mu)
			losses := make([]float32, TP)
			grads := make([][]trainexec.Param, TP)
			var wg sync.WaitGroup
			for r := 0; r < TP; r++ {
				var params []trainexec.Param
				for _, p := range full {
					s := nn.ShardShape(p.Name, shapes[p.Name], TP)
					n := 1
					for _, d := range s {
						n *= d
					}
					w := make([]float32, n)
					nn.Shard(w, p.W, p.Name, shapes[p.Name], r, TP)
					params = append(params, trainexec.Param{Name: p.Name, W: w, G: make([]float32, n)})
				}
				grads[r] = params
				rp, err := trainexec.ForModelWith(cfg, params, B, T, kernels.NewPool(1), trainexec.Options{TP: rank{g, r}})
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					losses[r] = rp.Forward(tok, tgt, B, T)
					rp.Backward()
				})
			}
			wg.Wait()
			for r := 0; r < TP; r++ {
				if rel := math.Abs(float64(losses[r]-want)) / float64(want); rel > 1e-6 {
					t.Errorf("rank %d: loss %v, unsplit %v", r, losses[r], want)
				}
				for i, p := range grads[r] {
					ws := make([]float32, len(p.G))
					nn.Shard(ws, full[i].G, p.Name, shapes[p.Name], r, TP)
					var d, s float64
					for j := range ws {
						d = max(d, math.Abs(float64(p.G[j]-ws[j])))
						s = max(s, math.Abs(float64(ws[j])))
					}
					if d > 1e-5*s {
						t.Errorf("rank %d: gradient of %s differs by %g (max %g)", r, p.Name, d, s)
					}
				}
			}
		})
	}
}

// brokenRank is a group whose every reduction fails.
type brokenRank struct{ r int }

var errGone = errors.New("peer gone")

func (b brokenRank) Rank() int                    { return b.r }
func (b brokenRank) Size() int                    { return 2 }
func (brokenRank) AllReduceSum(x []float32) error { return errGone }
func (brokenRank) AllReduceMax(x []float32) error { return errGone }

func TestTPCommErrorPanics(t *testing.T) {
	cfg := tinyConfigs()["gqa-tied"]
	const B, T = 1, 4
	m, err := nn.NewWith(cfg, B, T, nil, nn.Options{TP: brokenRank{0}})
	if err != nil {
		t.Fatal(err)
	}
	var params []trainexec.Param
	for _, p := range m.Params() {
		params = append(params, trainexec.Param{Name: p.Name, W: p.W, G: p.G})
	}
	prog, err := trainexec.ForModelWith(cfg, params, B, T, nil, trainexec.Options{TP: brokenRank{0}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ce, ok := recover().(*trainexec.CommError)
		if !ok || ce.Op != "embedding" || !errors.Is(ce, errGone) {
			t.Errorf("panic %v, want a *CommError of the embedding's reduction wrapping %v", ce, errGone)
		}
	}()
	prog.Forward([]int32{1, 2, 3, 4}, []int32{2, 3, 4, 5}, B, T)
	t.Error("Forward over a broken group returned")
}
