// This file is what the engine knows of run-time LoRA adapters: a request's adapter id rides
// with its sequence to the executor (model.BatchSeq.Adapter), and is part of the prefix-cache
// key through the sequence's salt, so a block hash computed under one adapter never matches
// another adapter's (or the base model's) blocks.
package engine

import (
	"fmt"
	"strconv"
)

// adapterSalt is the prefix-cache key of a request with cache salt salt and adapter id: salt
// itself for the base model, else "\xff<id>\xff" + salt. The mapping is one-to-one (a salt of
// the base model that starts with 0xff, which no JSON string does, gets the "\xff0\xff"
// prefix), so no salt can make one adapter's blocks match another's.
func adapterSalt(salt string, adapter uint32) string {
	if adapter == 0 && (salt == "" || salt[0] != 0xff) {
		return salt
	}
	return "\xff" + strconv.FormatUint(uint64(adapter), 10) + "\xff" + salt
}

// validateAdapter refuses an adapter id when the engine has no adapters.
func (e *Engine) validateAdapter(r *Request) error {
	if r.Adapter != 0 && e.opts.LoRA == nil {
		return fmt.Errorf("engine: request %s: LoRA adapter %d, but the engine serves no adapters", r.ID, r.Adapter)
	}
	return nil
}
