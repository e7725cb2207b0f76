// The grammar cache: one compilation per key (errors included), LRU eviction, the time limit,
// a panicking frontend contained, one Vocab per model.
package server

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/loader"
)

func TestGrammarCache(t *testing.T) {
	b, err := loader.Open(storiesPath(t), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := newGrammarCache(b.Tok, b.Model.Config.Vocab, GrammarOptions{Timeout: 100 * time.Millisecond, CacheSize: 2})
	ir, err := grammar.Regex("a+")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[string]int{}
	build := func(key string) func() (*grammar.IR, error) {
		return func() (*grammar.IR, error) {
			mu.Lock()
			calls[key]++
			mu.Unlock()
			return ir, nil
		}
	}
	count := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[key]
	}
	g1, err1 := c.compile("a", build("a"))
	g2, err2 := c.compile("a", build("a"))
	if count("a") != 1 || g1 != g2 || (err1 == nil) != (err2 == nil) {
		t.Fatalf("a compiled %d times: %v %v", count("a"), err1, err2)
	}
	c.compile("b", build("b"))
	c.compile("c", build("c")) // evicts a, the least recently used
	c.compile("a", build("a"))
	if count("a") != 2 || count("b") != 1 {
		t.Fatalf("after eviction: %v", calls)
	}

	bad := errors.New("bad schema")
	for range 2 {
		if _, err := c.compile("x", func() (*grammar.IR, error) {
			build("x")()
			return nil, bad
		}); !errors.Is(err, bad) {
			t.Fatalf("error: %v", err)
		}
	}
	if count("x") != 1 {
		t.Fatalf("a failing build ran %d times", count("x"))
	}

	release := make(chan struct{})
	slow := func() (*grammar.IR, error) { <-release; return nil, bad }
	start := time.Now()
	if _, err := c.compile("slow", slow); !errors.Is(err, errCompileTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("slow: %v after %v", err, time.Since(start))
	}
	close(release)
	time.Sleep(20 * time.Millisecond)
	if _, err := c.compile("slow", slow); !errors.Is(err, bad) {
		t.Fatalf("slow, once finished: %v", err)
	}

	_, err = c.compile("p", func() (*grammar.IR, error) { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "internal error") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panic: %v", err)
	}

	v := c.Vocab()
	if v != c.Vocab() || v.Size() != max(b.Model.Config.Vocab, b.Tok.VocabSize()) {
		t.Fatalf("vocab of %d tokens, model %d", v.Size(), b.Model.Config.Vocab)
	}
}
