// This file implements the draft-model proposer: a smaller model with the target's vocabulary
// (or the target itself at a lower bit width) guesses the next K tokens of every sequence. It
// keeps its own paged KV pool with a simple free list, and per sequence a block table and the
// tokens whose K/V rows its cache holds. Each Propose call runs one batched forward that
// catches every sequence up to the caller's tokens (the longest common prefix of the cache and
// the tokens stays; the rest, rejected drafts included, is recomputed: that is the rollback),
// then K-1 batched one-token rounds, each drafting one more token per sequence.

package spec

import (
	"fmt"
	"sync"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
)

// DraftOptions configures a draft-model proposer; zero fields take the defaults.
type DraftOptions struct {
	// KVTokens is the token slots of the draft's KV pool (default: 64 sequences of the
	// draft's context length, at most DefaultDraftKVBytes). A sequence whose blocks do not
	// fit gets no draft until others are forgotten.
	KVTokens int
	// BlockSize is the token slots per KV block (default 16).
	BlockSize int
	// MaxBatchTokens bounds the rows of one catch-up forward (default 2048); longer catch-ups
	// (new prompts) run as several forwards.
	MaxBatchTokens int
	// MaxLen is the longest sequence drafted for, its drafts included (default and at most:
	// the draft's context length; 0 there = no limit); longer ones get no draft.
	MaxLen int
	// Invariant runs the draft's forwards batch-invariant (model.Batch.Invariant), so a
	// sequence's drafts do not depend on the other sequences drafted with it.
	Invariant bool
}

// DefaultDraftKVBytes caps the default draft KV pool.
const DefaultDraftKVBytes = 256 << 20

// Draft is a draft-model proposer (engine.Proposer). Its methods may be called from several
// goroutines; they run one at a time.
type Draft struct {
	m     *model.Model
	opts  DraftOptions
	kv    *model.PagedKV
	free  []int32 // free block ids
	seqs  map[engine.SeqID]*draftSeq
	close func() error // releases the draft's model files (Build sets it)

	mu    sync.Mutex
	b     model.Batch
	act   []active
	batch []model.BatchSeq
	ents  []int // act index of each entry of batch
	rows  []int // act index of each logits row of batch
}

// draftSeq is what the draft keeps for one sequence.
type draftSeq struct {
	tokens []int           // the tokens whose K/V rows the cache holds, positions 0..
	table  []int32         // its blocks
	smp    *sample.Sampler // draws the drafts of a sampling request (draft_sample.go)
	probs  [][]float32     // the distributions of its drafts (reused)
}

// active is one request's state during a Propose call.
type active struct {
	req *engine.ProposeRequest
	s   *draftSeq
	k   int    // tokens to draft
	one [1]int // the token a one-token round feeds
}

// NewDraft returns a proposer drafting with m (which must share the target's vocabulary:
// Build checks it).
func NewDraft(m *model.Model, opts DraftOptions) (*Draft, error) {
	if opts.BlockSize == 0 {
		opts.BlockSize = 16
	}
	if opts.MaxBatchTokens == 0 {
		opts.MaxBatchTokens = 2048
	}
	if opts.KVTokens == 0 {
		ctx := m.Config.CtxLen
		if ctx <= 0 {
			ctx = 2048
		}
		perTok := m.KVBytesPerTokenCache()
		opts.KVTokens = int(min(int64(64*ctx), DefaultDraftKVBytes/max(perTok, 1)))
	}
	if ctx := m.Config.CtxLen; opts.MaxLen == 0 || ctx > 0 && opts.MaxLen > ctx {
		opts.MaxLen = ctx
	}
	if opts.BlockSize < 1 || opts.MaxBatchTokens < 1 || opts.KVTokens < opts.BlockSize || opts.MaxLen < 0 {
		return nil, fmt.Errorf("spec: draft: KV of %d tokens in blocks of %d, %d tokens per forward",
			opts.KVTokens, opts.BlockSize, opts.MaxBatchTokens)
	}
	nb := opts.KVTokens / opts.BlockSize
	kv, err := m.NewPagedKV(nb, opts.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("spec: draft: %w", err)
	}
	d := &Draft{m: m, opts: opts, kv: kv, seqs: map[engine.SeqID]*draftSeq{}}
	d.b.Invariant = opts.Invariant
	for b := nb - 1; b >= 0; b-- {
		d.free = append(d.free, int32(b))
	}
	return d, nil
}

// Model is the draft model.
func (d *Draft) Model() *model.Model { return d.m }

// Blocks reports the free and total blocks of the draft's KV pool.
func (d *Draft) Blocks() (free, total int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.free), d.kv.NumBlocks
}

// Close releases the draft model's files when Build opened them. Call it after the engine
// using the proposer has stopped.
func (d *Draft) Close() error {
	if d.close == nil {
		return nil
	}
	err := d.close()
	d.close = nil
	return err
}

// Forget frees the blocks of sequence id.
func (d *Draft) Forget(id engine.SeqID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.seqs[id]; s != nil {
		d.free = append(d.free, s.table...)
		delete(d.seqs, id)
	}
}

// Propose drafts up to reqs[i].K tokens for each request: greedy (Probs nil) when the
// request's temperature is 0, otherwise drawn from the draft's distribution with Probs set
// (draft_sample.go).
func (d *Draft) Propose(reqs []engine.ProposeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.act = d.act[:0]
	maxK := 0
	for i := range reqs {
		r := &reqs[i]
		r.Draft, r.Probs = r.Draft[:0], nil
		if a, ok := d.admit(r); ok {
			d.act = append(d.act, a)
			maxK = max(maxK, a.k)
		}
	}
	if len(d.act) == 0 {
		return nil
	}
	if err := d.catchUp(); err != nil {
		return err
	}
	for round := 1; round < maxK; round++ {
		d.batch, d.ents, d.rows = d.batch[:0], d.ents[:0], d.rows[:0]
		for i := range d.act {
			a := &d.act[i]
			if a.k <= round {
				continue
			}
			a.one[0] = a.req.Draft[round-1]
			d.batch = append(d.batch, model.BatchSeq{
				Tokens: a.one[:], StartPos: len(a.s.tokens), BlockTable: a.s.table, NeedsLogits: true,
			})
			d.ents = append(d.ents, i)
			d.rows = append(d.rows, i)
		}
		if len(d.batch) == 0 {
			break
		}
		if err := d.forward(); err != nil {
			return err
		}
	}
	return nil
}

// admit prepares request r: its sequence state, the common prefix of its cache and r.Tokens,
// and the blocks its catch-up and drafts need. It reports false (no draft) when the sequence
// does not fit the draft's context or KV pool.
func (d *Draft) admit(r *engine.ProposeRequest) (active, bool) {
	n, k := len(r.Tokens), r.K
	if d.opts.MaxLen > 0 {
		k = min(k, d.opts.MaxLen-n+1) // the last draft is fed at position n+k-2
	}
	if n == 0 || k < 1 {
		return active{}, false
	}
	s := d.seqs[r.ID]
	if s == nil {
		s = &draftSeq{}
		d.seqs[r.ID] = s
	}
	p := 0
	for p < len(s.tokens) && p < n && s.tokens[p] == r.Tokens[p] {
		p++
	}
	p = min(p, n-1) // the last token is always fed: its logits give the first draft
	for _, t := range r.Tokens[p:] {
		if t < 0 || t >= d.m.Config.Vocab {
			return active{}, false
		}
	}
	need := (n + k - 1 + d.kv.BlockSize - 1) / d.kv.BlockSize
	if more := need - len(s.table); more > 0 {
		if more > len(d.free) {
			return active{}, false
		}
		s.table = append(s.table, d.free[len(d.free)-more:]...)
		d.free = d.free[:len(d.free)-more]
	}
	s.tokens = s.tokens[:p]
	return active{req: r, s: s, k: k}, true
}

// catchUp feeds every active sequence the tokens its cache lacks, in forwards of at most
// MaxBatchTokens rows, and drafts each one's first token from its last row's logits.
func (d *Draft) catchUp() error {
	for {
		d.batch, d.ents, d.rows = d.batch[:0], d.ents[:0], d.rows[:0]
		budget := d.opts.MaxBatchTokens
		for i := range d.act {
			a := &d.act[i]
			toks := a.req.Tokens[len(a.s.tokens):]
			if len(toks) == 0 {
				continue
			}
			if budget == 0 {
				break
			}
			take := min(len(toks), budget)
			budget -= take
			last := take == len(toks)
			d.batch = append(d.batch, model.BatchSeq{
				Tokens: toks[:take], StartPos: len(a.s.tokens), BlockTable: a.s.table, NeedsLogits: last,
			})
			d.ents = append(d.ents, i)
			if last {
				d.rows = append(d.rows, i)
			}
		}
		if len(d.batch) == 0 {
			return nil
		}
		if err := d.forward(); err != nil {
			return err
		}
	}
}

// forward runs d.batch (entry e belongs to act d.ents[e]), records the fed tokens in each
// sequence's cache, and drafts one token for each act in d.rows from its logits row. On an
// error no request keeps a draft.
func (d *Draft) forward() error {
	logits, err := d.m.ForwardBatch(&d.b, d.kv, d.batch)
	if err != nil {
		for i := range d.act {
			d.act[i].req.Draft, d.act[i].req.Probs = d.act[i].req.Draft[:0], nil
		}
		return fmt.Errorf("spec: draft: %w", err)
	}
	for e, i := range d.ents {
		d.act[i].s.tokens = append(d.act[i].s.tokens, d.batch[e].Tokens...)
	}
	V := d.m.Config.Vocab
	for j, i := range d.rows {
		a := &d.act[i]
		a.req.Draft = append(a.req.Draft, d.choose(a, logits[j*V:(j+1)*V]))
	}
	return nil
}
