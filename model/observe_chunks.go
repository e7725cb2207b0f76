// This file runs a model over calibration text with a matmul observer attached: the one loop
// that quantization's calibration (quant/calib) and W8A8's SmoothQuant statistics
// (w8a8_calib.go) share.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph/exec"
)

// ObserveChunks runs m over ids in chunks of ctx tokens (a shorter tail too), each chunk one
// sequence from position 0 with obs seeing every matmul's input. With bos >= 0 each chunk's
// first token is replaced by bos (as llama-perplexity scores); with allRows every row's
// logits are computed (so the output head's input is observed on every row), else only the
// last row's. before, when set, is called with the chunk's index before it runs.
func (m *Model) ObserveChunks(ids []int, ctx, bos int, allRows bool, obs exec.MatMulObserver, before func(chunk int)) error {
	if ctx < 1 {
		return fmt.Errorf("model: observe: chunk length %d", ctx)
	}
	const bs = 16
	kv, err := m.NewPagedKV((ctx+bs-1)/bs, bs)
	if err != nil {
		return err
	}
	table := make([]int32, (ctx+bs-1)/bs)
	for i := range table {
		table[i] = int32(i)
	}
	b := &Batch{Observer: obs}
	chunk := make([]int, ctx)
	for ch, lo := 0, 0; lo < len(ids); ch, lo = ch+1, lo+ctx {
		n := copy(chunk, ids[lo:min(lo+ctx, len(ids))])
		if bos >= 0 {
			chunk[0] = bos
		}
		if before != nil {
			before(ch)
		}
		seq := BatchSeq{Tokens: chunk[:n], BlockTable: table, NeedsLogits: true}
		if allRows {
			seq.NumLogits = n
		}
		if _, err := m.ForwardBatch(b, kv, []BatchSeq{seq}); err != nil {
			return fmt.Errorf("model: observe: chunk %d (tokens %d..%d): %w", ch, lo, lo+n-1, err)
		}
	}
	return nil
}
