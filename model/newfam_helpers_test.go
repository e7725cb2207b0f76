// Helpers of the Qwen3-MoE and Gemma 3 tests: random norm weights, and a model run through
// the paged executor as one ragged prefill batch then token by token.
package model_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// randomNorms gives p's norm weights values around 1 (synth writes 1.0), so that a norm
// applied the wrong way shows.
func randomNorms(p *convert.Plan, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := range p.Tensors {
		tn := &p.Tensors[i]
		if !strings.HasSuffix(tn.Name, "norm.weight") {
			continue
		}
		data := make([]byte, 4*tn.Shape[0])
		for j := 0; j < tn.Shape[0]; j++ {
			binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(float32(1+0.3*r.NormFloat64())))
		}
		w := &tensor.Tensor{Name: tn.Name, Type: tensor.F32, Shape: tn.Shape, Data: data}
		tn.Load = func() (*tensor.Tensor, error) { return w, nil }
	}
}

// pagedLogits runs seqs through m's paged executor over blocks of 4: the first pre[i] tokens
// of each as one ragged batch, then one token per sequence per step; every row's logits.
func pagedLogits(t *testing.T, m *model.Model, seqs [][]int, pre []int) []float32 {
	t.Helper()
	const bs = 4
	blocks := 0
	for _, s := range seqs {
		blocks += (len(s) + bs - 1) / bs
	}
	kv, err := m.NewPagedKV(blocks, bs)
	if err != nil {
		t.Fatal(err)
	}
	tables := make([][]int32, len(seqs))
	next := int32(0)
	for i, s := range seqs {
		for range (len(s) + bs - 1) / bs {
			tables[i] = append(tables[i], next)
			next++
		}
	}
	v := m.Config.Vocab
	var batch model.Batch
	per := make([][]float32, len(seqs))
	var first []model.BatchSeq
	for i, s := range seqs {
		first = append(first, model.BatchSeq{Tokens: s[:pre[i]], BlockTable: tables[i], NeedsLogits: true, NumLogits: pre[i]})
	}
	l, err := m.ForwardBatch(&batch, kv, first)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i := range seqs {
		per[i] = append(per[i], l[off:off+pre[i]*v]...)
		off += pre[i] * v
	}
	for step := 0; ; step++ {
		var bseqs []model.BatchSeq
		var who []int
		for i, s := range seqs {
			if p := pre[i] + step; p < len(s) {
				bseqs = append(bseqs, model.BatchSeq{Tokens: s[p : p+1], StartPos: p, BlockTable: tables[i], NeedsLogits: true})
				who = append(who, i)
			}
		}
		if len(bseqs) == 0 {
			break
		}
		l, err := m.ForwardBatch(&batch, kv, bseqs)
		if err != nil {
			t.Fatal(err)
		}
		for j, i := range who {
			per[i] = append(per[i], l[j*v:(j+1)*v]...)
		}
	}
	var all []float32
	for _, p := range per {
		all = append(all, p...)
	}
	return all
}

// maxDiff is the largest |want - got| and the largest |want|.
func maxDiff(want []float64, got []float32) (diff, abs float64) {
	for i := range want {
		abs = math.Max(abs, math.Abs(want[i]))
		diff = math.Max(diff, math.Abs(want[i]-float64(got[i])))
	}
	return diff, abs
}

// editConfigJSON sets fields of dir's config.json (a value nil deletes the field).
func editConfigJSON(t *testing.T, dir string, fields map[string]any) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
