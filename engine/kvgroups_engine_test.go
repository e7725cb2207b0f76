// Tests of KV groups on a real model: a random-weight Gemma 2 (synth, window 8, blocks of 4
// tokens) generating 200 tokens for several sequences at once. The local (windowed) group's
// blocks per sequence stay at ceil(window/block)+1 while the global group's grow with the
// sequence, the tokens and logprobs are bit-identical to the same engine with one pool for
// every layer (nothing released), and equal the unpaged single-sequence forward; under a
// small pool (preemptions) too; every block of every group is free at the end.

package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/synth"
)

const (
	swaWindow = 8
	swaBlock  = 4
	swaGen    = 200
)

// gemma2Window loads a random-weight Gemma 2 of 4 layers (2 local, 2 global) with window w.
func gemma2Window(t *testing.T, w int) *model.Model {
	t.Helper()
	return synthModel(t, synth.Options{Arch: "gemma2", Dim: 32, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 64,
		Vocab: 300, CtxLen: 1024, SlidingWindow: w, AttnSoftcap: 20, FinalSoftcap: 10, Seed: 21, Std: 0.3})
}

// synthModel writes o's random-weight model as GGUF and loads it.
func synthModel(t *testing.T, o synth.Options) *model.Model {
	t.Helper()
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Model
}

var swaPrompts = [][]int{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {40, 41, 42, 43, 44}, {100, 7, 250, 13, 99, 3, 3, 3, 17, 18, 19, 20, 21}}

// swaRun generates swaGen greedy tokens for every prompt at once and returns their tokens and
// logprobs; onStep, if set, is called on the step loop after every step.
func swaRun(t *testing.T, m *model.Model, mod func(*Options), onStep func(e *Engine)) ([][]int, [][]float64, *Engine) {
	t.Helper()
	o := DefaultOptions()
	o.BatchInvariant = true
	o.Scheduler.BlockSizeTokens = swaBlock
	o.Scheduler.NumBlocks = 256
	o.Scheduler.MaxModelLenTokens = 256
	o.Scheduler.MaxNumBatchedTokens = 64
	o.Scheduler.MaxNumSeqs = 4 // the local pool: max(4 x (2+2) + 64/4, 256/4) = 64 blocks
	var e *Engine
	var mu sync.Mutex
	if onStep != nil {
		o.OnStep = func(StepMetrics) {
			mu.Lock()
			defer mu.Unlock()
			onStep(e)
		}
	}
	if mod != nil {
		mod(&o)
	}
	mu.Lock()
	e, err := New(m, nil, o)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownAndCheck(t, e) })
	chans := make([]<-chan Output, len(swaPrompts))
	for i, p := range swaPrompts {
		ch, err := e.Add(context.Background(), Request{ID: fmt.Sprint(i), Prompt: p, MaxTokens: swaGen, IgnoreEOS: true,
			Params: sample.Params{Logprobs: true}})
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	toks, lps := make([][]int, len(chans)), make([][]float64, len(chans))
	for i, ch := range chans {
		r := collect(ch)
		if len(r.tokens) != swaGen || r.final.FinishReason != FinishLength {
			t.Fatalf("request %d: %d tokens, %q (%v)", i, len(r.tokens), r.final.FinishReason, r.final.Err)
		}
		toks[i] = r.tokens
		for _, lp := range r.lps {
			lps[i] = append(lps[i], lp.Logprob)
		}
	}
	return toks, lps, e
}

// forwardGreedy is the unpaged reference: prompt then n greedy tokens through model.Forward on
// one contiguous cache, with each chosen token's logprob.
func forwardGreedy(t *testing.T, m *model.Model, prompt []int, n int) ([]int, []float64) {
	t.Helper()
	c := m.NewCache(len(prompt) + n)
	logits, err := m.Forward(c, prompt, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var toks []int
	var lps []float64
	for len(toks) < n {
		best, mx := 0, math.Inf(-1)
		for i, v := range logits {
			if float64(v) > mx {
				best, mx = i, float64(v)
			}
		}
		var sum float64
		for _, v := range logits {
			sum += math.Exp(float64(v) - mx)
		}
		toks, lps = append(toks, best), append(lps, -math.Log(sum))
		if len(toks) == n {
			break
		}
		if logits, err = m.Decode(c, best); err != nil {
			t.Fatal(err)
		}
	}
	return toks, lps
}

func TestKVGroupsGemma2Window(t *testing.T) {
	m := gemma2Window(t, swaWindow)
	if gs := m.KVGroups(); len(gs) != 2 || gs[0].Window != swaWindow || gs[1].Window != 0 || fmt.Sprint(gs[0].Layers) != "[0 2]" {
		t.Fatalf("KV groups %+v", gs)
	}
	// Per step: the most blocks any sequence holds in each group, and KV bytes per sequence by
	// length (the docs' table).
	maxHeld := []int{0, 0}
	bytesAt := map[int][2]int64{}
	toks, lps, e := swaRun(t, m, nil, func(e *Engine) {
		for g := range 2 {
			bm := e.sched.GroupBlocks(g)
			for _, q := range e.sched.running {
				maxHeld[g] = max(maxHeld[g], bm.NumHeldBlocks(q.ID))
				if q.ID == e.sched.running[0].ID {
					v := bytesAt[q.NumComputedTokens]
					v[g] = int64(bm.NumHeldBlocks(q.ID)*swaBlock) * e.cfg.KVGroups[g].BytesPerToken
					bytesAt[q.NumComputedTokens] = v
				}
			}
		}
		// /metrics' vllm:kv_cache_usage_perc: both groups' held blocks weighed by their bytes
		var used, total float64
		for g, kg := range e.cfg.KVGroups {
			bm := e.sched.GroupBlocks(g)
			used += float64((bm.NumBlocks() - bm.NumFreeBlocks()) * int(kg.BytesPerToken))
			total += float64(bm.NumBlocks() * int(kg.BytesPerToken))
		}
		if u := e.snapshot().KVUsage; math.Abs(u-used/total) > 1e-12 || (u <= 0 && len(e.sched.running) > 0) {
			t.Errorf("KV usage %v, want %v", u, used/total)
		}
	})
	cfg := e.Config()
	if len(cfg.KVGroups) != 2 || cfg.KVGroups[0].Window != 0 || cfg.KVGroups[1].Window != swaWindow || cfg.GroupBlocks()[1] != 64 {
		t.Fatalf("engine KV groups %+v", cfg.KVGroups)
	}
	// group 0 is the global one (layers 1, 3), group 1 the local one (layers 0, 2)
	local := (swaWindow+swaBlock-1)/swaBlock + 1
	longest := (len(swaPrompts[2]) + swaGen + swaBlock - 1) / swaBlock
	if maxHeld[1] > local || maxHeld[0] < longest-1 {
		t.Errorf("blocks per sequence: local at most %d (want <= %d), global up to %d (want about %d)", maxHeld[1], local, maxHeld[0], longest)
	}
	if b := bytesAt[208]; b[1] > int64(local*swaBlock)*cfg.KVGroups[1].BytesPerToken || b[0] < 200*cfg.KVGroups[0].BytesPerToken {
		t.Errorf("KV bytes at 208 tokens: global %d, local %d", b[0], b[1])
	}

	// The same engine with one pool for every layer (nothing released): bit-identical. Its
	// local layers' bytes per sequence, for the table.
	single := map[int]int64{}
	toks1, lps1, e1 := swaRun(t, m, func(o *Options) { o.SingleKVPool = true }, func(e *Engine) {
		if len(e.sched.running) > 0 {
			q := e.sched.running[0]
			single[q.NumComputedTokens] = int64(e.sched.Blocks().NumHeldBlocks(q.ID)*swaBlock) * cfg.KVGroups[1].BytesPerToken
		}
	})
	var tab strings.Builder
	fmt.Fprintf(&tab, "tokens  global KV bytes  local KV bytes  local, one pool\n")
	for _, n := range []int{10, 16, 32, 64, 128, 208} {
		v := bytesAt[n]
		fmt.Fprintf(&tab, "%6d  %15d  %14d  %15d\n", n, v[0], v[1], single[n])
	}
	t.Logf("window %d, blocks of %d: max blocks per sequence: global %d, local %d\n%s", swaWindow, swaBlock, maxHeld[0], maxHeld[1], tab.String())
	if e1.sched.NumKVGroups() != 1 || e1.Config().KVGroups != nil {
		t.Fatalf("SingleKVPool: %d groups", e1.sched.NumKVGroups())
	}
	for i := range toks {
		if fmt.Sprint(toks[i], lps[i]) != fmt.Sprint(toks1[i], lps1[i]) {
			t.Errorf("request %d: KV groups and one pool differ:\n%v\n%v", i, toks[i], toks1[i])
		}
	}
	// The unpaged forward, one sequence at a time: same tokens, logprobs within float error.
	for i, p := range swaPrompts {
		want, wlp := forwardGreedy(t, m, p, swaGen)
		if fmt.Sprint(want) != fmt.Sprint(toks[i]) {
			t.Errorf("request %d: engine %v, unpaged forward %v", i, toks[i], want)
			continue
		}
		var d float64
		for j := range wlp {
			d = math.Max(d, math.Abs(wlp[j]-lps[i][j]))
		}
		if d > 1e-4 {
			t.Errorf("request %d: logprobs differ from the unpaged forward by %g", i, d)
		}
	}
}

// TestKVGroupsPreemption: a global pool that holds about one and a half sequences forces
// preemptions (recompute through both groups); outputs stay those of the unpaged forward.
func TestKVGroupsPreemption(t *testing.T) {
	m := gemma2Window(t, swaWindow)
	toks, _, e := swaRun(t, m, func(o *Options) {
		o.Scheduler.NumBlocks = 80
		o.Scheduler.MaxModelLenTokens = 240
		o.Scheduler.PrefixCaching = false
	}, nil)
	if p := e.Stats().Preemptions; p == 0 {
		t.Errorf("no preemption")
	}
	for i, p := range swaPrompts {
		if want, _ := forwardGreedy(t, m, p, swaGen); fmt.Sprint(want) != fmt.Sprint(toks[i]) {
			t.Errorf("request %d: engine %v, unpaged forward %v", i, toks[i], want)
		}
	}
}

// TestPlanKVGroups: the budget split gives the windowed pool what its sequences can hold and
// the rest to the global pool; a window at least the model length is no window.
func TestPlanKVGroups(t *testing.T) {
	m := gemma2Window(t, swaWindow)
	cfg := DefaultConfig()
	cfg.BlockSizeTokens, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, cfg.MaxModelLenTokens = 4, 8, 64, 256
	per := KVBytesPerToken(4, 2, 16, 4)
	budget := int64(1000 * 4 * per)
	cfg.NumBlocks = NumBlocksForBudget(budget, 4, per)
	planKVGroups(m, &cfg, budget)
	g := cfg.KVGroups
	if len(g) != 2 || g[1].Window != swaWindow || g[1].NumBlocks != 64 || g[0].BytesPerToken != per/2 {
		t.Fatalf("groups %+v", g)
	}
	// 1000 blocks of the whole model's bytes are 2000 of half of them: the local pool takes
	// max(8 sequences x (2+2) + 64/4, 256/4) = 64, the global pool the rest.
	if cfg.NumBlocks != 2000-64 {
		t.Errorf("global pool %d blocks, want %d", cfg.NumBlocks, 2000-64)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	cfg.MaxModelLenTokens = swaWindow
	planKVGroups(m, &cfg, 0)
	if cfg.KVGroups != nil {
		t.Errorf("window %d, model length %d: groups %+v", swaWindow, swaWindow, cfg.KVGroups)
	}
}

// TestKVGroupsPhi3Window: Phi-3 with a window: one windowed group (every layer), whose blocks
// per sequence stop growing; outputs equal the unpaged forward; no leaks.
func TestKVGroupsPhi3Window(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "phi3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 300,
		CtxLen: 1024, SlidingWindow: swaWindow, Std: 0.25, Seed: 5})
	maxHeld := 0
	toks, lps, e := swaRun(t, m, nil, func(e *Engine) {
		for _, q := range e.sched.running {
			maxHeld = max(maxHeld, e.sched.Blocks().NumHeldBlocks(q.ID))
		}
	})
	if g := e.Config().KVGroups; len(g) != 1 || g[0].Window != swaWindow || e.sched.NumKVGroups() != 1 {
		t.Fatalf("KV groups %+v", g)
	}
	if local := (swaWindow+swaBlock-1)/swaBlock + 1; maxHeld > local {
		t.Errorf("%d blocks per sequence, want at most %d", maxHeld, local)
	}
	for i, p := range swaPrompts {
		want, wlp := forwardGreedy(t, m, p, swaGen)
		if fmt.Sprint(want) != fmt.Sprint(toks[i]) {
			t.Errorf("request %d: engine %v, unpaged forward %v", i, toks[i], want)
			continue
		}
		for j := range wlp {
			if math.Abs(wlp[j]-lps[i][j]) > 1e-4 {
				t.Fatalf("request %d token %d: logprob %v, unpaged forward %v", i, j, lps[i][j], wlp[j])
			}
		}
	}
}

// TestKVGroupsPrefixHit: a prompt run twice: the second run hits the prefix in both groups
// (the local group's released blocks stayed cached) and still gives the unpaged forward's
// tokens.
func TestKVGroupsPrefixHit(t *testing.T) {
	m := gemma2Window(t, swaWindow)
	o := DefaultOptions()
	o.BatchInvariant = true
	o.Scheduler.BlockSizeTokens, o.Scheduler.NumBlocks, o.Scheduler.MaxModelLenTokens = swaBlock, 128, 256
	e, err := New(m, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownAndCheck(t, e) })
	prompt := make([]int, 30)
	for i := range prompt {
		prompt[i] = (i*13 + 5) % 300
	}
	want, _ := forwardGreedy(t, m, prompt, 20)
	for run := range 2 {
		ch, err := e.Add(context.Background(), Request{ID: fmt.Sprint(run), Prompt: prompt, MaxTokens: 20, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		if r := collect(ch); fmt.Sprint(r.tokens) != fmt.Sprint(want) {
			t.Errorf("run %d: %v, unpaged forward %v", run, r.tokens, want)
		}
	}
	if hit := e.Stats().PrefixHitTokens; hit != 28 {
		t.Errorf("prefix hit %d tokens, want 28 (7 full blocks of the 30-token prompt)", hit)
	}
}
