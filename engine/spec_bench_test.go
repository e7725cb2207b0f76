// A measurement, not a test: with LLMCLOUD_SPEC_BENCH=model.gguf it serves batches of 1 to 64
// (or LLMCLOUD_SPEC_BENCH_M="1,8,64") greedy requests with and without speculation (an oracle
// proposer whose drafts are wrong with probability 0.3, k = 4) and logs generated tokens per
// second of each, alternating runs. It backs the choice of DefaultDisableByBatchSize
// (docs/engine.md). It asserts nothing.
//
//	LLMCLOUD_SPEC_BENCH=/path/target.gguf go test ./engine -run TestSpecThroughputReport -v
package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

func TestSpecThroughputReport(t *testing.T) {
	path := os.Getenv("LLMCLOUD_SPEC_BENCH")
	if path == "" {
		t.Skip("set LLMCLOUD_SPEC_BENCH to a model file")
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	V := b.Model.Config.Vocab
	mk := func(n int) []Request {
		var reqs []Request
		for i := range n {
			p := []int{1}
			for j := range 31 {
				p = append(p, 3+(i*131+j*17)%(V-3))
			}
			reqs = append(reqs, Request{ID: fmt.Sprint(i), Prompt: p, MaxTokens: 48, IgnoreEOS: true})
		}
		return reqs
	}
	run := func(reqs []Request, mod func(*Options)) float64 {
		o := DefaultOptions()
		o.Scheduler.NumBlocks = 1024
		if mod != nil {
			mod(&o)
		}
		e, err := New(b.Model, b.Tok, o)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		res := runAll(t, e, reqs)
		d := time.Since(t0)
		shutdownAndCheck(t, e)
		n := 0
		for _, r := range res {
			n += len(r.tokens)
		}
		return float64(n) / d.Seconds()
	}
	for _, conc := range benchSizes(t) {
		reqs := mk(conc)
		refs := references(t, newEngine(t, b, nil), reqs)
		var off, on, auto float64
		for range 2 {
			off += run(reqs, nil)
			p := newOracle(refs, 0.3, V)
			on += run(reqs, specOpts(p, 4))
			p = newOracle(refs, 0.3, V)
			auto += run(reqs, func(o *Options) { o.Speculative = SpecOptions{Proposer: p, NumTokens: 4} })
		}
		t.Logf("%2d sequences: off %7.1f tok/s, on %7.1f (x%.2f), default switch %7.1f (x%.2f)",
			conc, off/2, on/2, on/off, auto/2, auto/off)
	}
}

// TestSpecVerifyCostReport (same switch) times one forward of m decode rows against m
// speculative entries of 1+k rows (k = 1, 2, 4) on the paged pool: the verification's cost,
// min of 9 alternating runs. Speculation pays while a sequence's expected tokens per step
// (1 + accepted drafts) exceed the ratio.
func TestSpecVerifyCostReport(t *testing.T) {
	path := os.Getenv("LLMCLOUD_SPEC_BENCH")
	if path == "" {
		t.Skip("set LLMCLOUD_SPEC_BENCH to a model file")
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const bs, ctx = 16, 64
	kv, err := b.Model.NewPagedKV(64*5+64, bs)
	if err != nil {
		t.Fatal(err)
	}
	var batch model.Batch
	forward := func(m, rows int) time.Duration {
		seqs := make([]model.BatchSeq, m)
		for i := range seqs {
			table := make([]int32, 5)
			for j := range table {
				table[j] = int32(i*5 + j)
			}
			toks := make([]int, rows)
			for j := range toks {
				toks[j] = 3 + (i+j)%100
			}
			seqs[i] = model.BatchSeq{Tokens: toks, StartPos: ctx, BlockTable: table, NeedsLogits: true, NumLogits: rows}
		}
		t0 := time.Now()
		if _, err := b.Model.ForwardBatch(&batch, kv, seqs); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	}
	ms := benchSizes(t)
	for _, m := range ms {
		best := map[int]time.Duration{}
		for range 9 {
			for _, rows := range []int{1, 2, 3, 5} {
				if d := forward(m, rows); best[rows] == 0 || d < best[rows] {
					best[rows] = d
				}
			}
		}
		t.Logf("%2d sequences: decode %8v; verify k=1 x%.2f, k=2 x%.2f, k=4 x%.2f", m, best[1],
			float64(best[2])/float64(best[1]), float64(best[3])/float64(best[1]), float64(best[5])/float64(best[1]))
	}
}

// benchSizes are the batch sizes to measure: 1 to 64, or LLMCLOUD_SPEC_BENCH_M ("1,8").
func benchSizes(t *testing.T) []int {
	v := os.Getenv("LLMCLOUD_SPEC_BENCH_M")
	if v == "" {
		return []int{1, 2, 4, 8, 16, 32, 64}
	}
	var ms []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 64 {
			t.Fatalf("LLMCLOUD_SPEC_BENCH_M: %q", f)
		}
		ms = append(ms, n)
	}
	return ms
}
