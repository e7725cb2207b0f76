// This file keeps a finished request's prompt KV for a consumer (Request.HoldKV): when such a
// request finishes, the step loop, which is between steps then, copies the prompt's cached
// blocks out, and ExportKV hands the copy over at once instead of waiting for the loop's next
// step boundary (a producer busy with a long prefill step would otherwise hold every export
// for that step's duration). A copy is handed over once, and dropped unfetched after holdFor or
// when the copies would exceed the KV pool's own size.

package engine

import (
	"errors"
	"time"
)

// holdFor is how long an unfetched copy is kept.
const holdFor = 60 * time.Second

type heldKV struct {
	blocks [][]byte
	bytes  int64
	at     time.Time // when the request finished
	until  time.Time
}

// promptKey identifies prompt's exportable blocks under salt: the chained hash of its last
// block before the prompt's last token (ok false when there is none).
func promptKey(prompt []int, salt string, bs int) (BlockHash, bool) {
	if len(prompt) == 0 {
		return BlockHash{}, false
	}
	n := (len(prompt) - 1) / bs
	var h BlockHash
	for i := range n {
		h = hashBlock(h, prompt[i*bs:(i+1)*bs], salt)
	}
	return h, n > 0
}

// holdKV copies st's prompt blocks for a later ExportKV (step loop).
func (e *Engine) holdKV(st *reqState) {
	salt := adapterSalt(st.req.CacheSalt, st.req.Adapter)
	key, ok := promptKey(st.req.Prompt, salt, e.cfg.BlockSizeTokens)
	if !ok {
		return
	}
	blocks, err := e.copyBlocks(st.req.Prompt, salt)
	if err != nil || len(blocks) == 0 {
		return
	}
	now := e.now()
	h := heldKV{blocks: blocks, at: now, until: now.Add(holdFor)}
	for _, b := range blocks {
		h.bytes += int64(len(b))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.popWaiting(key); s != nil {
		// An export came after the request had left e.holding and before this copy: it waits
		// for the copy (kvtransfer_stream.go).
		s.mu.Lock()
		s.held, s.prefillEnd = true, now
		s.mu.Unlock()
		if len(blocks) == s.n {
			s.push(blocks, false)
		} else {
			s.fail(errors.New("engine: the prompt's blocks left the cache before its export"))
		}
		close(s.attached)
		return
	}
	e.expireHeld()
	if old, dup := e.held[key]; dup {
		e.heldBytes -= old.bytes
	}
	if e.heldBytes+h.bytes > e.runner.kv.Bytes() {
		return // consumers are not fetching: the export will copy from the cache if it still can
	}
	if e.held == nil {
		e.held = map[BlockHash]heldKV{}
	}
	e.held[key] = h
	e.heldBytes += h.bytes
}

// takeHeld returns and forgets the copy of prompt's blocks, if one is held (e.mu held).
func (e *Engine) takeHeld(prompt []int, salt string) ([][]byte, bool) {
	key, ok := promptKey(prompt, salt, e.cfg.BlockSizeTokens)
	if !ok {
		return nil, false
	}
	h, ok := e.takeHeldKey(key)
	return h.blocks, ok
}

// takeHeldKey returns and forgets the copy held under key, if any (e.mu held).
func (e *Engine) takeHeldKey(key BlockHash) (heldKV, bool) {
	e.expireHeld()
	h, ok := e.held[key]
	if !ok {
		return heldKV{}, false
	}
	delete(e.held, key)
	e.heldBytes -= h.bytes
	return h, true
}

// expireHeld drops copies past their time (e.mu held).
func (e *Engine) expireHeld() {
	now := e.now()
	for k, h := range e.held {
		if now.After(h.until) {
			delete(e.held, k)
			e.heldBytes -= h.bytes
		}
	}
}
