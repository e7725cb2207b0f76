// Package distill samples whole documents from a model through the serving engine: each
// request starts from the BOS token alone, so what comes back is the model's own idea of a
// document, ended by its EOS or by a BOS (llama2.c's models, trained on BOS-separated
// documents without EOS, end a story by starting the next). The documents are training data for a smaller or differently
// tokenized student (`llmcloud data distill`; recipes/default made the default model this way).
package distill

import (
	"context"
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Options says how many documents to sample and how.
type Options struct {
	Docs        int     // documents to keep
	Temperature float64 // sampling temperature
	TopP        float64 // nucleus mass (1 = off)
	MaxTokens   int     // a document longer than this is dropped (0 = the model's context)
	InFlight    int     // requests kept in the engine at once
	Seed        uint64  // request i samples with Seed+i
	// MaxRepeat drops a document whose 4-gram repetition rate (Repetition) is above it
	// (0 = keep all): the teacher's loops should not become the student's.
	MaxRepeat float64
	Engine    engine.Options
}

// Stats counts what Run sampled and kept.
type Stats struct {
	Sampled, Kept         int
	DroppedLength         int // hit MaxTokens or the context before EOS
	DroppedRepeat         int // over MaxRepeat
	DroppedEmpty          int
	KeptTokens, AllTokens int64
}

// Run samples until o.Docs documents are kept, calling emit with each (trimmed, blank lines
// folded to single newlines so that a blank line can separate documents). A document is kept
// only if the model ended it with an end-of-generation token.
func Run(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, o Options, emit func(doc string) error) (Stats, error) {
	var st Stats
	if o.Docs < 1 {
		return st, fmt.Errorf("distill: need at least one document")
	}
	bos := tok.BOS()
	if bos < 0 {
		return st, fmt.Errorf("distill: the tokenizer has no BOS token to start documents from")
	}
	o.InFlight = min(max(o.InFlight, 1), o.Docs)
	e, err := engine.New(m, tok, o.Engine)
	if err != nil {
		return st, err
	}
	defer e.Shutdown(context.Background())
	maxTok := o.MaxTokens
	if maxTok <= 0 || maxTok > e.Config().MaxModelLenTokens-1 {
		maxTok = e.Config().MaxModelLenTokens - 1
	}
	type result struct {
		text   string
		reason string
		n      int
		err    error
	}
	done := make(chan result, o.InFlight)
	next := 0
	start := func() error {
		id := next
		next++
		ch, err := e.Add(ctx, engine.Request{
			ID: fmt.Sprint(id), Prompt: []int{bos}, MaxTokens: maxTok, StopTokenIDs: []int{bos},
			Params: sample.Params{Temperature: o.Temperature, TopP: o.TopP, Seed: o.Seed + uint64(id)},
		})
		if err != nil {
			return err
		}
		go func() {
			var b strings.Builder
			var r result
			for out := range ch {
				b.WriteString(out.Text)
				r.n += len(out.TokenIDs)
				if out.Finished {
					r.reason, r.err = out.FinishReason, out.Err
				}
			}
			r.text = b.String()
			done <- r
		}()
		return nil
	}
	inflight := 0
	for ; inflight < o.InFlight; inflight++ {
		if err := start(); err != nil {
			return st, err
		}
	}
	for inflight > 0 {
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			return st, ctx.Err()
		}
		inflight--
		if r.err != nil {
			return st, r.err
		}
		st.Sampled++
		st.AllTokens += int64(r.n)
		doc := Clean(r.text)
		switch {
		case r.reason != engine.FinishStop:
			st.DroppedLength++
		case doc == "":
			st.DroppedEmpty++
		case o.MaxRepeat > 0 && Repetition(tok.Encode(doc, false, false), 4) > o.MaxRepeat:
			st.DroppedRepeat++
		default:
			if st.Kept < o.Docs {
				st.Kept++
				st.KeptTokens += int64(r.n)
				if err := emit(doc); err != nil {
					return st, err
				}
			}
		}
		if st.Kept+inflight < o.Docs {
			if err := start(); err != nil {
				return st, err
			}
			inflight++
		}
	}
	return st, nil
}

// Clean trims a document and folds runs of blank lines (and trailing spaces) so that the
// document holds no blank line.
func Clean(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t"); strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimLeft(l, " \t"))
		}
	}
	return strings.Join(out, "\n")
}

// Repetition is the share of a sequence's n-grams that already occurred earlier in it: 0 for
// text that never repeats itself, near 1 for a loop. Fewer than n+1 ids give 0.
func Repetition(ids []int, n int) float64 {
	if len(ids) <= n {
		return 0
	}
	seen := map[string]bool{}
	rep, total := 0, 0
	key := make([]byte, 0, 8*n)
	for i := 0; i+n <= len(ids); i++ {
		key = key[:0]
		for _, id := range ids[i : i+n] {
			key = fmt.Appendf(key, "%d,", id)
		}
		k := string(key)
		if seen[k] {
			rep++
		}
		seen[k] = true
		total++
	}
	return float64(rep) / float64(total)
}
