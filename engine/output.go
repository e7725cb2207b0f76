// This file implements a request's state in the step loop and its output stream: sampled
// tokens become text through the tokenizer's streaming decoder and generate.StopMatcher (stop
// strings are held back while they may still match), and each step's delta goes to the
// request's channel without ever blocking the loop — when the client lags, deltas are merged,
// and one slot is always kept free for the final Output.

package engine

import (
	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// reqState is one request as the engine tracks it.
type reqState struct {
	req     Request
	seq     SeqID
	dec     seqSampler // sampler, constraint and mask buffer
	out     chan Output
	stop    *stopText
	stopCtx func() bool // stops the context watcher

	// under Engine.mu: a HoldKV request's registration and the stream following it
	// (kvtransfer_stream.go)
	holdKey BlockHash
	holding bool
	kvs     *KVStream

	// step loop only
	metrics  RequestMetrics
	started  bool
	cached   int
	nOut     int
	finished bool
	pending  *Output   // merged deltas the channel had no room for
	spec     specSeq   // recent acceptance of its drafts (engine_spec.go)
	hidden   []float32 // the target's hidden row of its last token, for a HiddenProposer
}

// stopText turns token ids into final text: streaming detokenization, then stop strings.
type stopText struct {
	dec     *tokenizer.Decoder
	m       *generate.StopMatcher
	stopped bool
}

func newStopText(tok *tokenizer.Tokenizer, stops []string) *stopText {
	if tok == nil {
		return nil
	}
	return &stopText{dec: tok.NewDecoder(), m: generate.NewStopMatcher(stops)}
}

// add takes a generated id and returns the text that became final; stopped reports a stop
// string (the text ends just before it).
func (s *stopText) add(id int) (string, bool) {
	if s == nil || s.stopped {
		return "", s != nil && s.stopped
	}
	out, stopped := s.m.Push(s.dec.Add(id))
	s.stopped = stopped
	return out, stopped
}

// flush releases what is held back at the end of generation: an unfinished UTF-8 tail (which
// may still complete a stop string), then a partial stop-string match.
func (s *stopText) flush() (string, bool) {
	if s == nil || s.stopped {
		return "", s != nil && s.stopped
	}
	out, stopped := s.m.Push(s.dec.Flush())
	s.stopped = stopped
	if !stopped {
		out += s.m.Flush()
	}
	return out, stopped
}

// send delivers o (a delta) to the client, merged with any deltas still pending. A final
// Output always fits: non-final sends leave one slot free. final closes the stream.
func (st *reqState) send(o Output, final bool) {
	if p := st.pending; p != nil {
		p.TokenIDs = append(p.TokenIDs, o.TokenIDs...)
		p.Text += o.Text
		p.Logprobs = append(p.Logprobs, o.Logprobs...)
		o.TokenIDs, o.Text, o.Logprobs = p.TokenIDs, p.Text, p.Logprobs
		st.pending = nil
	}
	if final {
		st.out <- o
		close(st.out)
		return
	}
	if len(st.out) < cap(st.out)-1 {
		st.out <- o
		return
	}
	st.pending = &o
}

// flushPending retries a pending delta (when the client has read since).
func (st *reqState) flushPending() {
	if p := st.pending; p != nil && len(st.out) < cap(st.out)-1 {
		st.pending = nil
		st.out <- *p
	}
}
