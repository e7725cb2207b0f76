// This file sizes serve's KV pool: from --kv-cache-memory when given, else a default pool grown
// to hold one maximum-length sequence but never beyond a fraction of the machine's available memory. The
// model's context length (which a file may set to anything) never sizes memory by itself.
package main

import (
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/sysmem"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// defaultKVFraction is the share of available memory the KV pool may take without
// --kv-cache-memory (a pool above model.PrefaultLimit commits its pages only as they are used).
const defaultKVFraction = 0.10

// defaultKVBudget is the KV memory used when --kv-cache-memory is not given: a fraction of
// available memory, 4 GiB when that is unknown.
func defaultKVBudget() int64 {
	if m := sysmem.Available(); m > 0 {
		return int64(float64(m) * defaultKVFraction)
	}
	return 4 << 30
}

// sizeKV fills sc.NumBlocks and sc.MaxModelLenTokens for serving mc. maxLen is --max-model-len
// (0 = the model's context length, capped by the pool), kvBytes is --kv-cache-memory (0 = the
// scheduler's default blocks, grown to one maximum-length sequence within budget). It returns
// a note for the log when the context length was capped, "" otherwise.
func sizeKV(sc *engine.Config, mc *model.Config, kvType kernels.KVDType, maxLen int, kvBytes, budget int64) (string, error) {
	per := mc.KVCacheBytesPerToken(kvType)
	if kvBytes > 0 {
		sc.NumBlocks = engine.NumBlocksForBudget(kvBytes, sc.BlockSizeTokens, per)
		budget = kvBytes
	} else {
		want := maxLen
		if want == 0 {
			want = mc.CtxLen
		}
		limit := engine.NumBlocksForBudget(budget, sc.BlockSizeTokens, per)
		if n := engine.BlocksForLength(want, sc.BlockSizeTokens, limit); n > sc.NumBlocks {
			sc.NumBlocks = n
		}
		if sc.NumBlocks > limit {
			sc.NumBlocks = limit
		}
	}
	pool := sc.NumBlocks * sc.BlockSizeTokens
	if sc.NumBlocks <= 0 {
		return "", fmt.Errorf("KV budget of %d bytes holds not one block of %d tokens (%d B/token)", budget, sc.BlockSizeTokens, per)
	}
	if maxLen > pool {
		return "", fmt.Errorf("--max-model-len %d needs more KV cache than the budget of %d bytes holds (%d tokens at %d B/token); lower --max-model-len or raise --kv-cache-memory",
			maxLen, budget, pool, per)
	}
	sc.MaxModelLenTokens = maxLen
	if maxLen == 0 {
		sc.MaxModelLenTokens = engine.DefaultMaxModelLen(mc.CtxLen, sc.NumBlocks, sc.BlockSizeTokens)
		if mc.CtxLen > sc.MaxModelLenTokens {
			return fmt.Sprintf("the model's context length %d does not fit the KV cache (%d bytes, %d tokens at %d B/token): max_model_len is %d; set --max-model-len or --kv-cache-memory to change it",
				mc.CtxLen, budget, pool, per, sc.MaxModelLenTokens), nil
		}
	}
	return "", nil
}
