// This file lets two engines serving the same model hand a prompt's KV rows from one to the
// other (disaggregated prefill and decode; the wire is package kvtransfer's). The producer's
// ExportKV copies the prompt's full blocks that its prefix cache holds; the consumer's request
// carries them in Request.ImportKV, and admission installs them as prefix-cache entries (each a
// cached block with no reference, like a block a finished request left behind) before the
// scheduler looks the prompt up. So an import is only ever a prefix-cache hit: whatever was not
// installed, or was evicted before the request ran, is recomputed, and a failed import changes
// nothing but the time the prompt takes. No block is referenced by an import, so none can leak.

package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmcloud/llmcloud/model"
)

// exportReq is an ExportKV call waiting for the step loop.
type exportReq struct {
	prompt []int
	salt   string
	reply  chan exportResult
}

type exportResult struct {
	blocks [][]byte
	err    error
}

// KVLayout is the layout of the engine's KV blocks (model.ErrBlockGroups for a model whose
// windowed layers have their own pools: those engines do not transfer KV).
func (e *Engine) KVLayout() (model.BlockLayout, error) {
	if !e.cfg.PrefixCaching {
		return model.BlockLayout{}, errors.New("engine: KV transfer needs prefix caching")
	}
	return e.runner.kv.BlockLayout()
}

// ExportKV returns the KV rows of prompt's leading full blocks that the prefix cache holds
// under cacheSalt and adapter (at most the blocks before the prompt's last token, as a prefix
// hit would use), one []byte per block in KVLayout's layout; none (and no error) when nothing is
// cached. A copy kept by a finished HoldKV request of the same prompt is returned at once
// (kvtransfer_hold.go); otherwise the step loop copies between two steps.
func (e *Engine) ExportKV(ctx context.Context, prompt []int, cacheSalt string, adapter uint32) ([][]byte, error) {
	if _, err := e.KVLayout(); err != nil {
		return nil, err
	}
	x := &exportReq{prompt: prompt, salt: adapterSalt(cacheSalt, adapter), reply: make(chan exportResult, 1)}
	e.mu.Lock()
	if blocks, ok := e.takeHeld(prompt, x.salt); ok {
		e.mu.Unlock()
		return blocks, nil
	}
	if !e.accepting {
		e.mu.Unlock()
		return nil, ErrShutdown
	}
	e.inbox = append(e.inbox, event{kind: evExport, x: x})
	e.mu.Unlock()
	e.signal()
	select {
	case res := <-x.reply:
		return res.blocks, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// exportKV answers x (step loop).
func (e *Engine) exportKV(x *exportReq) {
	blocks, err := e.copyBlocks(x.prompt, x.salt)
	x.reply <- exportResult{blocks: blocks, err: err}
}

// copyBlocks copies the rows of prompt's cached leading blocks under salt (step loop).
func (e *Engine) copyBlocks(prompt []int, salt string) ([][]byte, error) {
	ids, _ := e.sched.blocks.GetComputedBlocks(prompt, salt)
	return e.readBlocks(ids)
}

// validateImport checks r.ImportKV against the pool's layout (Add).
func (e *Engine) validateImport(r Request) error {
	if len(r.ImportKV) == 0 {
		return nil
	}
	l, err := e.KVLayout()
	if err != nil {
		return fmt.Errorf("engine: request %s: imported KV: %w", r.ID, err)
	}
	for i, b := range r.ImportKV {
		if len(b) != l.BlockBytes() {
			return fmt.Errorf("engine: request %s: imported KV block %d is %d bytes, want %d (%v)", r.ID, i, len(b), l.BlockBytes(), l)
		}
	}
	return nil
}

// importKV installs st's Request.ImportKV as prefix-cache entries (step loop) and returns the
// number of blocks the prefix cache now holds for the prompt's start. Blocks that do not fit,
// are left to compute (Add checked the layout).
func (e *Engine) importKV(st *reqState) (int, error) {
	r := &st.req
	salt := adapterSalt(r.CacheSalt, r.Adapter)
	return e.sched.blocks.InstallCached(r.Prompt, salt, len(r.ImportKV), func(b BlockID, i int) error {
		return e.runner.kv.WriteBlock(int(b), r.ImportKV[i])
	})
}
