// This file streams a prompt's KV blocks to a consumer while the producer is still prefilling
// it (disaggregated prefill and decode with the transfer overlapped with the prefill). A
// HoldKV request is registered under its prompt's key (promptKey) from Add until it finishes;
// StreamKV attaches to it, and after every step the step loop, between two steps, copies the
// prompt's full blocks the step completed into the stream. An export that arrives before the
// HoldKV request does waits for it (bounded by the caller), then streams. The blocks are
// copies: a stream holds no KV block, so a consumer that leaves, or a prefill that is aborted,
// leaves nothing behind (the stream just fails).

package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StreamKV returns the KV rows of prompt's leading full blocks (at most the blocks before its
// last token) under cacheSalt and adapter, as a stream. A HoldKV request of the same prompt
// that is live is followed: each block is handed out as soon as the step that computed it has
// finished. A copy a finished HoldKV request left is handed out at once. Otherwise, when wait
// is positive, StreamKV waits up to wait for such a request to be added, then follows it;
// failing that (or with wait 0) the step loop copies what the prefix cache holds at its next
// step boundary, as ExportKV does. The caller must Close the stream.
func (e *Engine) StreamKV(ctx context.Context, prompt []int, cacheSalt string, adapter uint32, wait time.Duration) (*KVStream, error) {
	if _, err := e.KVLayout(); err != nil {
		return nil, err
	}
	salt := adapterSalt(cacheSalt, adapter)
	key, ok := promptKey(prompt, salt, e.cfg.BlockSizeTokens)
	if !ok {
		return completed(nil), nil // no full block before the last token: nothing to send
	}
	n := (len(prompt) - 1) / e.cfg.BlockSizeTokens
	s := newKVStream(n)
	e.mu.Lock()
	if h, ok := e.takeHeldKey(key); ok {
		e.mu.Unlock()
		return heldStream(h), nil
	}
	if e.attachStream(key, s) {
		e.mu.Unlock()
		return s, nil
	}
	if wait <= 0 {
		e.mu.Unlock()
		return e.exportStream(ctx, prompt, cacheSalt, adapter)
	}
	if e.kvWaiting == nil {
		e.kvWaiting = map[BlockHash][]*KVStream{}
	}
	e.kvWaiting[key] = append(e.kvWaiting[key], s)
	e.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case <-s.attached:
		return s, nil
	case <-t.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	e.mu.Lock()
	found := !e.dropWaiting(key, s)
	e.mu.Unlock()
	if found { // attached while the timer fired
		if err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	return e.exportStream(ctx, prompt, cacheSalt, adapter)
}

func heldStream(h heldKV) *KVStream {
	s := completed(h.blocks)
	s.held, s.prefillEnd = true, h.at
	return s
}

func (e *Engine) exportStream(ctx context.Context, prompt []int, cacheSalt string, adapter uint32) (*KVStream, error) {
	blocks, err := e.ExportKV(ctx, prompt, cacheSalt, adapter)
	if err != nil {
		return nil, err
	}
	return completed(blocks), nil
}

// attachStream gives s to a live HoldKV request of key that has no stream yet (e.mu held).
func (e *Engine) attachStream(key BlockHash, s *KVStream) bool {
	for _, st := range e.holding[key] {
		if st.kvs == nil {
			st.kvs = s
			s.mu.Lock()
			s.held = true
			s.mu.Unlock()
			close(s.attached)
			return true
		}
	}
	return false
}

// dropWaiting removes s from the waiting streams; false when it is no longer there (e.mu held).
func (e *Engine) dropWaiting(key BlockHash, s *KVStream) bool {
	w := e.kvWaiting[key]
	for i, x := range w {
		if x == s {
			w = append(w[:i:i], w[i+1:]...)
			if len(w) == 0 {
				delete(e.kvWaiting, key)
			} else {
				e.kvWaiting[key] = w
			}
			return true
		}
	}
	return false
}

// popWaiting removes and returns the first stream waiting for key (e.mu held).
func (e *Engine) popWaiting(key BlockHash) *KVStream {
	w := e.kvWaiting[key]
	if len(w) == 0 {
		return nil
	}
	s := w[0]
	e.dropWaiting(key, s)
	return s
}

// registerHold makes st followable (Add, e.mu held), giving it a waiting stream if any.
func (e *Engine) registerHold(st *reqState) {
	salt := adapterSalt(st.req.CacheSalt, st.req.Adapter)
	key, ok := promptKey(st.req.Prompt, salt, e.cfg.BlockSizeTokens)
	if !ok {
		return
	}
	st.holdKey, st.holding = key, true
	if e.holding == nil {
		e.holding = map[BlockHash][]*reqState{}
	}
	e.holding[key] = append(e.holding[key], st)
	if s := e.popWaiting(key); s != nil {
		e.attachStream(key, s)
	}
}

// refuseHold ends the exports waiting for r, a HoldKV request that Add refused.
func (e *Engine) refuseHold(r Request, err error) {
	key, ok := promptKey(r.Prompt, adapterSalt(r.CacheSalt, r.Adapter), e.cfg.BlockSizeTokens)
	if !ok {
		return
	}
	e.mu.Lock()
	w := e.kvWaiting[key]
	delete(e.kvWaiting, key)
	e.mu.Unlock()
	for _, s := range w {
		s.fail(fmt.Errorf("engine: the prefill of the exported prompt was refused: %w", err))
		close(s.attached)
	}
}

// unregisterHold forgets st and returns its stream (e.mu held): none attaches after this.
func (e *Engine) unregisterHold(st *reqState) *KVStream {
	if !st.holding {
		return nil
	}
	st.holding = false
	l := e.holding[st.holdKey]
	for i, x := range l {
		if x == st {
			l = append(l[:i:i], l[i+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(e.holding, st.holdKey)
	} else {
		e.holding[st.holdKey] = l
	}
	s := st.kvs
	st.kvs = nil
	return s
}

// feedStreams copies, after a step, the blocks that step completed into the streams that
// follow live HoldKV requests (step loop).
func (e *Engine) feedStreams() {
	e.mu.Lock()
	if len(e.holding) == 0 {
		e.mu.Unlock()
		return
	}
	type follow struct {
		st *reqState
		s  *KVStream
	}
	var fs []follow
	for _, l := range e.holding {
		for _, st := range l {
			if st.kvs != nil {
				fs = append(fs, follow{st, st.kvs})
			}
		}
	}
	e.mu.Unlock()
	bs := e.cfg.BlockSizeTokens
	for _, f := range fs {
		if f.s.isClosed() {
			continue // the reader left: its request finishes, and keeps no copy (finishHold)
		}
		seq := e.sched.Sequence(f.st.seq)
		if seq == nil {
			continue // not admitted yet
		}
		table := e.sched.blocks.BlockTable(f.st.seq)
		avail := min(seq.NumComputedTokens/bs, len(table), f.s.n) // none while preempted
		from := f.s.copiedCount()
		if avail <= from {
			continue
		}
		blocks, err := e.readBlocks(table[from:avail])
		if err != nil {
			f.s.fail(err)
			continue
		}
		f.s.push(blocks, seq.NumComputedTokens < len(f.st.req.Prompt))
	}
}

// finishHold ends st's part in transfers when it finishes (step loop, before its blocks can be
// reused): a stream following it gets the rest of the blocks, or fails if st was aborted;
// without a stream, the blocks are copied for a later export (holdKV).
func (e *Engine) finishHold(st *reqState, reason string) {
	e.mu.Lock()
	s := e.unregisterHold(st)
	e.mu.Unlock()
	switch {
	case reason == FinishAbort:
		if s != nil {
			s.fail(ErrHoldAborted)
		}
	case s == nil:
		e.holdKV(st)
	case s.isClosed():
	default:
		end := e.now()
		from := s.copiedCount()
		ids, _ := e.sched.blocks.GetComputedBlocks(st.req.Prompt, adapterSalt(st.req.CacheSalt, st.req.Adapter))
		if len(ids) < s.n {
			s.fail(errors.New("engine: the prompt's blocks left the cache before its export"))
			return
		}
		blocks, err := e.readBlocks(ids[from:s.n])
		if err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		s.prefillEnd = end
		s.mu.Unlock()
		s.push(blocks, false)
	}
	if reason != FinishAbort && s != nil {
		// A second export of the same prompt that waits (the request had a stream already)
		// gets a copy now rather than the prefix cache's after its wait.
		e.mu.Lock()
		waiting := len(e.kvWaiting[st.holdKey]) > 0
		e.mu.Unlock()
		if waiting {
			e.holdKV(st)
		}
	}
}

// readBlocks copies the rows of blocks ids (step loop).
func (e *Engine) readBlocks(ids []BlockID) ([][]byte, error) {
	l, err := e.runner.kv.BlockLayout()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(ids))
	for _, b := range ids {
		buf, err := e.runner.kv.ReadBlock(make([]byte, 0, l.BlockBytes()), int(b))
		if err != nil {
			return nil, err
		}
		out = append(out, buf)
	}
	return out, nil
}
