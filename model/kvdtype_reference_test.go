package model

import (
	"fmt"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

// TestKVCacheDTypeReference runs llama.cpp's reference prompts (testdata/reference, the models
// of TestReference) with every KV cache type and checks the greedy choice against llama.cpp's
// wherever its top-2 logit gap exceeds 0.05: on every prompt row (gaps from the reference
// logits) and at every greedy step, fed the reference's previous token (teacher forcing).
func TestKVCacheDTypeReference(t *testing.T) {
	const minGap = 0.05
	for _, rm := range refModels {
		t.Run(rm.name, func(t *testing.T) {
			m := openRef(t, rm.path)
			for _, typ := range []kernels.KVDType{kernels.KVF16, kernels.KVBF16, kernels.KVQ8, kernels.KVFP8} {
				if err := m.SetKVCacheDType(typ); err != nil {
					t.Fatal(err)
				}
				checked := 0
				for k := 1; k <= 3; k++ {
					checked += checkRefGreedy(t, m, fmt.Sprintf("%s__p%d", rm.name, k), typ, minGap)
				}
				t.Logf("%v: %d positions with a top-2 gap > %g agree", typ, checked, minGap)
			}
			m.KVCacheDType = kernels.KVF32
		})
	}
}

// checkRefGreedy checks one reference case and returns how many positions it compared.
func checkRefGreedy(t *testing.T, m *Model, name string, typ kernels.KVDType, minGap float64) int {
	t.Helper()
	rc, want := loadRef(t, name)
	nv := m.Config.Vocab
	c := m.NewCache(len(rc.PromptIDs) + len(rc.GreedyIDs))
	got, err := m.Forward(c, rc.PromptIDs, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range rc.PromptIDs {
		w := want[r*nv : (r+1)*nv]
		if a, g := argmax(w), top2Gap(w); g > minGap {
			n++
			if b := argmax(got[r*nv : (r+1)*nv]); b != a {
				t.Errorf("%s %v: prompt row %d: argmax %d, llama.cpp %d (gap %.3g)", name, typ, r, b, a, g)
			}
		}
	}
	logits := got[(len(rc.PromptIDs)-1)*nv:]
	for s, id := range rc.GreedyIDs {
		if s > 0 {
			if logits, err = m.Decode(c, rc.GreedyIDs[s-1]); err != nil {
				t.Fatal(err)
			}
		}
		if rc.GreedyGap[s] > minGap {
			n++
			if a := argmax(logits); a != id {
				t.Errorf("%s %v: greedy step %d: argmax %d, llama.cpp %d (gap %.3g)", name, typ, s, a, id, rc.GreedyGap[s])
			}
		}
	}
	return n
}

// top2Gap is the largest value minus the second largest.
func top2Gap(v []float32) float64 {
	a := argmax(v)
	var second float32
	first := true
	for i, x := range v {
		if i != a && (first || x > second) {
			second, first = x, false
		}
	}
	return float64(v[a] - second)
}
