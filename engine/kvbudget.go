// This file implements the sizing of the paged KV cache: bytes of K and V per token, and how
// many fixed-size blocks fit in a byte budget.

package engine

// KVBytesPerToken is the memory one token's keys and values take across the whole model:
// 2 (K and V) x layers x KV heads x head dim x bytes per element, for full attention (the
// engine sizes its pool by model.Config.KVBytesPerToken, which also knows multi-head latent
// attention's smaller rows).
func KVBytesPerToken(numLayers, numKVHeads, headDim, elemBytes int) int64 {
	return 2 * int64(numLayers) * int64(numKVHeads) * int64(headDim) * int64(elemBytes)
}

// NumBlocksForBudget is how many blocks of blockSizeTokens tokens fit in budgetBytes when each
// token takes kvBytesPerToken (rounded down; 0 when not even one block fits).
func NumBlocksForBudget(budgetBytes int64, blockSizeTokens int, kvBytesPerToken int64) int {
	if budgetBytes <= 0 || blockSizeTokens <= 0 || kvBytesPerToken <= 0 {
		return 0
	}
	return int(budgetBytes / (int64(blockSizeTokens) * kvBytesPerToken))
}

// DefaultMaxModelLen is the maximum model length when none is asked for: the model's context
// length (4096 when unknown), capped by the tokens a pool of numBlocks blocks holds.
func DefaultMaxModelLen(ctxLen, numBlocks, blockSizeTokens int) int {
	n := ctxLen
	if n <= 0 {
		n = 4096
	}
	if pool := numBlocks * blockSizeTokens; numBlocks > 0 && blockSizeTokens > 0 && pool < n {
		n = pool
	}
	return n
}

// BlocksForLength is how many blocks of blockSizeTokens one sequence of n tokens needs, at
// most maxBlocks (when maxBlocks > 0).
func BlocksForLength(n, blockSizeTokens, maxBlocks int) int {
	if n <= 0 || blockSizeTokens <= 0 {
		return 0
	}
	b := (n + blockSizeTokens - 1) / blockSizeTokens
	if maxBlocks > 0 && b > maxBlocks {
		b = maxBlocks
	}
	return b
}
