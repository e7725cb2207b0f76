// Structured output, the compile side: a spec (or any grammar.IR, for tool calling) compiled
// once into a grammar.Grammar and kept in a bounded LRU keyed by (kind, canonical text);
// compilation runs off the request goroutine under a time limit, so a pathological schema
// answers 400 instead of hanging the request; the model's grammar.Vocab is built once, lazily;
// every choice of a request gets its own Matcher as engine.Request.Constraint.
package server

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// GrammarOptions bounds structured-output compilation. Zero values take the defaults noted.
type GrammarOptions struct {
	Limits         grammar.Limits // passed to grammar.Compile (zero: the grammar package's defaults)
	Timeout        time.Duration  // longest a request waits for a compilation (default 10 s)
	MaxSourceBytes int            // largest schema, regex, grammar or choice list (default 1 MiB)
	CacheSize      int            // compiled grammars kept (default 256)
	// NoJumpForward samples every token, even those the grammar forces (grammar.Forced), one
	// forward step each; by default they are appended unsampled (tests and measurements).
	NoJumpForward bool
}

func (o GrammarOptions) withDefaults() GrammarOptions {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxSourceBytes <= 0 {
		o.MaxSourceBytes = 1 << 20
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 256
	}
	return o
}

// grammarCache holds one model's compiled grammars and its Vocab.
type grammarCache struct {
	opts      GrammarOptions
	tok       *tokenizer.Tokenizer
	size      int // mask width: the model's vocabulary (it may exceed the tokenizer's)
	vocabOnce sync.Once
	vocab     *grammar.Vocab
	encode    func(string) []int // forced text to tokens (nil: no jump forward)

	mu    sync.Mutex
	lru   *list.List // of *grammarEntry, most recently used first
	byKey map[string]*list.Element
	sem   chan struct{} // compilations running at once
}

// grammarEntry is one compilation, finished when done is closed.
type grammarEntry struct {
	key  string
	done chan struct{}
	g    *grammar.Grammar
	err  error
}

func newGrammarCache(tok *tokenizer.Tokenizer, modelVocab int, opts GrammarOptions) *grammarCache {
	return &grammarCache{opts: opts.withDefaults(), tok: tok, size: max(modelVocab, tok.VocabSize()),
		lru: list.New(), byKey: map[string]*list.Element{}, sem: make(chan struct{}, 2)}
}

// Vocab is the model's vocabulary as the grammar sees it: token i's bytes (nil for control
// tokens and ids past the tokenizer's), and the end-of-generation ids.
func (c *grammarCache) Vocab() *grammar.Vocab {
	c.vocabOnce.Do(func() {
		c.vocab = grammar.VocabFrom(c.tok, c.size)
		if !c.opts.NoJumpForward {
			c.encode = grammar.PlainEncoder(func(s string) []int { return c.tok.Encode(s, false, false) }, c.tok.Piece)
		}
	})
	return c.vocab
}

// errCompileTimeout is a compilation that took longer than GrammarOptions.Timeout.
var errCompileTimeout = errors.New("compiling it took too long")

// compile returns the grammar cached under key, building it (build then grammar.Compile) on
// a miss. Errors are cached too: the same bad schema fails fast the next time.
func (c *grammarCache) compile(key string, build func() (*grammar.IR, error)) (*grammar.Grammar, error) {
	c.mu.Lock()
	el, ok := c.byKey[key]
	if ok {
		c.lru.MoveToFront(el)
	} else {
		el = c.lru.PushFront(&grammarEntry{key: key, done: make(chan struct{})})
		c.byKey[key] = el
		for c.lru.Len() > c.opts.CacheSize {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.byKey, old.Value.(*grammarEntry).key)
		}
	}
	e := el.Value.(*grammarEntry)
	c.mu.Unlock()
	if !ok {
		go c.run(e, build)
	}
	t := time.NewTimer(c.opts.Timeout)
	defer t.Stop()
	select {
	case <-e.done:
		return e.g, e.err
	case <-t.C:
		return nil, fmt.Errorf("%w (over %v)", errCompileTimeout, c.opts.Timeout)
	}
}

// run compiles one entry; a panic in a frontend is the entry's error, not the server's end.
func (c *grammarCache) run(e *grammarEntry, build func() (*grammar.IR, error)) {
	c.sem <- struct{}{}
	defer func() {
		if r := recover(); r != nil {
			e.g, e.err = nil, fmt.Errorf("internal error compiling it: %v", r)
		}
		<-c.sem
		close(e.done)
	}()
	ir, err := build()
	if err != nil {
		e.err = err
		return
	}
	e.g, e.err = grammar.Compile(ir, c.opts.Limits)
}

// constraintPlan is a compiled constraint: NewConstraint gives each choice its own Matcher.
type constraintPlan struct {
	g      *grammar.Grammar
	vocab  *grammar.Vocab
	encode func(string) []int // nil: no jump forward
}

// NewConstraint starts a Matcher for one engine request; unless jump forward is off it is a
// grammar.ForcingMatcher, so the engine appends the tokens the grammar forces unsampled
// (engine.Forcer).
func (p *constraintPlan) NewConstraint() engine.Constraint {
	m := p.g.NewMatcher(p.vocab)
	if p.encode == nil {
		return m
	}
	return grammar.NewForcing(m, p.encode)
}

// compileSpec compiles a request's constraint (nil spec: none); errors are 400 naming the
// field.
func (st *state) compileSpec(spec *constraintSpec) (*constraintPlan, *apiError) {
	if spec == nil {
		return nil, nil
	}
	n := len(spec.text)
	for _, c := range spec.choices {
		n += len(c)
	}
	if max := st.grammars.opts.MaxSourceBytes; n > max {
		return nil, badRequest(spec.param, "%s is too large: %d bytes, the limit is %d", spec.param, n, max)
	}
	return st.CompileConstraint(spec.param, spec.key(), spec.ir)
}

// CompileConstraint is the hook every constrained request goes through (tool calling
// included): the grammar build returns, cached under key (a kind prefix and the canonical
// text it was made from), compiled under the time limit and with the model's Vocab. Errors
// are 400s naming param with the reason.
func (st *state) CompileConstraint(param, key string, build func() (*grammar.IR, error)) (*constraintPlan, *apiError) {
	g, err := st.grammars.compile(key, build)
	if err != nil {
		return nil, badRequest(param, "%s: %v", param, err)
	}
	v := st.grammars.Vocab()
	return &constraintPlan{g: g, vocab: v, encode: st.grammars.encode}, nil
}
