// This file implements the randomized tests: an interpreter turns a byte string into a
// configuration and a stream of operations (add, step, abort, finish, abort between Schedule
// and Update, speculative drafts) and checks every invariant after each one, the fake runner's KV reads on every
// step, progress (a step with live sequences never plans nothing) and no leaks once everything
// has finished. TestRandomOps feeds it seeded random bytes; FuzzOps lets the fuzzer choose.

package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

type byteSource struct {
	data []byte
	i    int
}

func (b *byteSource) next() int {
	if b.i >= len(b.data) {
		return 0
	}
	b.i++
	return int(b.data[b.i-1])
}

// prefixPool gives prompts common prefixes so the prefix cache gets hits.
var prefixPool = func() [][]int {
	r := rand.New(rand.NewPCG(1, 2))
	pool := make([][]int, 3)
	for i := range pool {
		for range 128 {
			pool[i] = append(pool[i], r.IntN(50))
		}
	}
	return pool
}()

func configFromBytes(src *byteSource) Config {
	cfg := DefaultConfig()
	cfg.NumBlocks = 2 + src.next()%30
	cfg.BlockSizeTokens = 1 + src.next()%8
	cfg.MaxNumBatchedTokens = 1 + src.next()%40
	cfg.MaxNumSeqs = 1 + src.next()%6
	flags := src.next()
	cfg.ChunkedPrefill = flags&1 == 0
	cfg.PrefixCaching = flags&2 == 0
	if flags&4 != 0 {
		cfg.Policy = PolicyPriority
	}
	cfg.MaxModelLenTokens = max(2, min(cfg.NumBlocks*cfg.BlockSizeTokens, 2+src.next()%64))
	return cfg
}

// opRunner drives one scheduler from a byte stream.
type opRunner struct {
	s       *Scheduler
	runner  *fakeRunner
	src     *byteSource
	nextID  SeqID
	clock   int64
	outputs map[SeqID][]int // all tokens of sequences finished by Update
	// finishedPrompt is the prompt length of each sequence in outputs.
	finishedPrompt map[SeqID]int
	totals         *opTotals
	groupRunners   []*fakeRunner // KV groups 1.. (kvgroups_test.go)
}

// opTotals sums counters over many runs, to show what the random test exercised.
type opTotals struct {
	steps, preemptions, aborted, finished, queryTokens, hitTokens, evictions int64
	draftTokens, accepted                                                    int64
}

func (t *opTotals) add(s *Scheduler) {
	if t == nil {
		return
	}
	st, bs := s.Stats(), s.blocks.Stats()
	t.steps += st.Steps
	t.preemptions += st.Preemptions
	t.aborted += st.Aborted
	t.finished += st.Finished
	t.queryTokens += bs.QueryTokens
	t.hitTokens += bs.HitTokens
	t.evictions += bs.Evictions
}

func newOpRunner(data []byte) (*opRunner, error) { return newOpRunnerGroups(data, nil) }

// newOpRunnerGroups is newOpRunner with groups, if set, adding KV groups to the configuration
// from the byte stream (kvgroups_test.go).
func newOpRunnerGroups(data []byte, groups func(*Config, *byteSource)) (*opRunner, error) {
	src := &byteSource{data: data}
	cfg := configFromBytes(src)
	if groups != nil {
		groups(&cfg, src)
	}
	s, err := NewScheduler(cfg)
	if err != nil {
		return nil, err
	}
	o := &opRunner{s: s, runner: newFakeRunner(cfg.NumBlocks, cfg.BlockSizeTokens), src: src,
		outputs: map[SeqID][]int{}, finishedPrompt: map[SeqID]int{}}
	if len(cfg.KVGroups) > 0 {
		o.runner.window = cfg.KVGroups[0].Window
	}
	for g := 1; g < len(cfg.KVGroups); g++ {
		r := newFakeRunner(cfg.groupBlocks(g), cfg.BlockSizeTokens)
		r.window = cfg.KVGroups[g].Window
		o.groupRunners = append(o.groupRunners, r)
	}
	return o, nil
}

func (o *opRunner) add() {
	src, cfg := o.src, o.s.cfg
	n := 1 + src.next()%(cfg.MaxModelLenTokens-1)
	base := prefixPool[src.next()%len(prefixPool)]
	shared := min(n, src.next()%(len(base)+1))
	prompt := slices.Clone(base[:shared])
	for len(prompt) < n {
		prompt = append(prompt, 50+src.next()%20)
	}
	flags := src.next()
	var stop []int
	if flags&1 != 0 {
		stop = []int{100 + src.next()%900}
	}
	salt := ""
	if flags&2 != 0 {
		salt = "s"
	}
	if flags&4 != 0 {
		o.clock++
	}
	o.nextID++
	// Errors (a prompt over the budget with chunked prefill off) are fine.
	o.s.AddRequest(SeqRequest{ID: o.nextID, Prompt: prompt, MaxTokens: src.next() % 12,
		StopTokenIDs: stop, Priority: src.next() % 3, ArrivalTime: o.clock, CacheSalt: salt})
}

// liveID picks a live sequence from the next byte (ok false when none).
func (o *opRunner) liveID() (SeqID, bool) {
	ids := slices.Sorted(maps.Keys(o.s.seqs))
	if len(ids) == 0 {
		return 0, false
	}
	return ids[o.src.next()%len(ids)], true
}

// step runs Schedule, the fake runner and Update; abortOne aborts one planned sequence
// between Schedule and Update.
func (o *opRunner) step(abortOne bool) error {
	live := o.s.HasUnfinished()
	plan := o.s.Schedule()
	if live && len(plan.Seqs) == 0 && len(plan.Preempted) == 0 {
		return fmt.Errorf("no progress: %d waiting, %d running, nothing planned", len(o.s.waiting), len(o.s.running))
	}
	if plan.NumBatchedTokens > o.s.cfg.MaxNumBatchedTokens {
		return fmt.Errorf("plan of %d tokens over the budget", plan.NumBatchedTokens)
	}
	sampled, err := o.runner.runSpec(o.s, plan)
	if err != nil {
		return err
	}
	if err := o.runGroups(plan); err != nil {
		return err
	}
	if abortOne && len(plan.Seqs) > 0 {
		o.s.Abort(plan.Seqs[o.src.next()%len(plan.Seqs)].ID)
	}
	seqs := map[SeqID]*Sequence{}
	for _, ss := range plan.Seqs {
		if q := o.s.seqs[ss.ID]; q != nil {
			seqs[ss.ID] = q
		}
	}
	outs, err := o.s.UpdateTokens(plan, sampled)
	if err != nil {
		return err
	}
	if err := o.checkWindows(); err != nil {
		return err
	}
	for _, out := range outs {
		if o.totals != nil {
			o.totals.draftTokens += int64(out.Drafts)
			o.totals.accepted += int64(out.Accepted)
		}
		if out.Status != StatusRunning {
			o.outputs[out.ID] = slices.Clone(seqs[out.ID].Tokens())
			o.finishedPrompt[out.ID] = seqs[out.ID].NumPromptTokens()
		}
	}
	return nil
}

func (o *opRunner) op() error {
	switch o.src.next() % 9 {
	case 0, 1:
		o.add()
	case 2, 3, 4:
		return o.step(false)
	case 5:
		if id, ok := o.liveID(); ok {
			o.s.Abort(id)
		}
	case 6:
		if id, ok := o.liveID(); ok {
			o.s.Finish(id, StatusFinishedStopped)
		}
	case 7:
		return o.step(true)
	case 8:
		o.drafts()
	}
	return nil
}

// drafts gives every running sequence a draft of 0..7 tokens (SetDraft ignores those not in
// decode): the model's true continuation, each token wrong with probability 1/4.
func (o *opRunner) drafts() {
	for _, seq := range o.s.running {
		h := slices.Clone(seq.tokens)
		var d []int
		for range o.src.next() % 8 {
			tok := fakeModel(h)
			if o.src.next()%4 == 0 {
				tok = 1000 + o.src.next()%3
			}
			h = append(h, tok)
			d = append(d, tok)
		}
		o.s.SetDraft(seq.ID, d)
	}
}

// drain steps until everything finishes and checks that no block leaked.
func (o *opRunner) drain() error {
	for i := 0; o.s.HasUnfinished(); i++ {
		if i > 100000 {
			return fmt.Errorf("drain: not finished after %d steps", i)
		}
		if err := o.step(false); err != nil {
			return err
		}
		if err := o.s.check(); err != nil {
			return err
		}
	}
	return o.s.checkEmpty()
}

func runOps(data []byte, totals *opTotals) error {
	return runOpsGroups(data, totals, nil)
}

func runOpsGroups(data []byte, totals *opTotals, groups func(*Config, *byteSource)) error {
	o, err := newOpRunnerGroups(data, groups)
	if err != nil {
		return err
	}
	o.totals = totals
	for o.src.i < len(o.src.data) {
		if err := o.op(); err != nil {
			return fmt.Errorf("op at byte %d: %w", o.src.i, err)
		}
		if err := o.s.check(); err != nil {
			return fmt.Errorf("after op at byte %d: %w", o.src.i, err)
		}
	}
	if err := o.drain(); err != nil {
		return err
	}
	// Every finished sequence's output is what the model gives on its own history, whatever
	// preemptions, chunks and prefix hits it went through.
	for id, toks := range o.outputs {
		q := o.finishedPrompt[id]
		for k := q; k < len(toks); k++ {
			if want := fakeModel(toks[:k]); toks[k] != want {
				return fmt.Errorf("seq %d: token %d is %d, the model gives %d", id, k, toks[k], want)
			}
		}
	}
	o.totals.add(o.s)
	st := o.s.blocks.Stats()
	if st.HitTokens > st.QueryTokens {
		return fmt.Errorf("hits %d > queries %d", st.HitTokens, st.QueryTokens)
	}
	return nil
}

func TestRandomOps(t *testing.T) {
	seeds, length := 1000, 600
	if testing.Short() {
		seeds = 50
	}
	var totals opTotals
	defer func() { t.Logf("%+v", totals) }()
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		data := make([]byte, length)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if err := runOps(data, &totals); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 3, 10, 2, 0, 30, 0, 10, 0, 1, 5, 2, 2, 2, 7, 5, 2})
	f.Add([]byte{1, 0, 5, 3, 6, 60, 0, 40, 1, 40, 0, 0, 0, 40, 2, 40, 2, 2, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runOps(data, nil); err != nil {
			t.Fatal(err)
		}
	})
}
