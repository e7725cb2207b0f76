// The compiled graph against llama.cpp's reference outputs (testdata/reference) for
// stories260K: every prompt row's logits, then greedy decoding through the paged cache.
package exec_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

type refCase struct {
	PromptIDs    []int     `json:"prompt_ids"`
	GreedyIDs    []int     `json:"greedy_ids"`
	GreedyLogits []float64 `json:"greedy_logits"`
	NVocab       int       `json:"n_vocab"`
	LogitsFile   string    `json:"logits_file"`
}

func loadRef(t *testing.T, name string) (refCase, []float32) {
	var rc refCase
	b, err := os.ReadFile(fixture.Path(t, "reference", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(fixture.Path(t, "reference", rc.LogitsFile))
	if err != nil {
		t.Fatal(err)
	}
	lg := make([]float32, len(raw)/4)
	for i := range lg {
		lg[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if len(lg) != len(rc.PromptIDs)*rc.NVocab {
		t.Fatalf("%s: %d logits, want %d", rc.LogitsFile, len(lg), len(rc.PromptIDs)*rc.NVocab)
	}
	return rc, lg
}

func TestStories260KReference(t *testing.T) {
	for _, c := range []struct {
		ref, file string
		tol       float64
	}{{"stories260K-f32", "stories260K-f32.gguf", 1e-4}, {"stories260K-f16", "stories260K-f16.gguf", 2e-2},
		{"stories260K-f32", "stories260K.bin", 1e-4}} {
		t.Run(c.file, func(t *testing.T) {
			path := fixture.Path(t, "models", "stories260K", c.file)
			var m *model.Model
			var err error
			if strings.HasSuffix(path, ".bin") {
				m, err = model.LoadLlama2C(path)
			} else {
				m, err = model.OpenGGUF(path)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			p := compile(t, m, false, graph.ServingPipeline())
			for k := 1; k <= 3; k++ {
				t.Run(fmt.Sprintf("p%d", k), func(t *testing.T) { checkRef(t, m, p, c.ref, k, c.tol) })
			}
		})
	}
}

func checkRef(t *testing.T, m *model.Model, p *exec.Program, ref string, k int, tol float64) {
	rc, want := loadRef(t, fmt.Sprintf("%s__p%d", ref, k))
	V := m.Config.Vocab
	n := len(rc.PromptIDs) + len(rc.GreedyIDs)
	kv, err := m.NewPagedKV(1, n)
	if err != nil {
		t.Fatal(err)
	}
	table := []int32{0}
	st := &exec.Step{Tokens: rc.PromptIDs, KV: exec.KV{K: kv.K, V: kv.V, BlockSize: n}}
	for i := range rc.PromptIDs {
		st.Rows = append(st.Rows, kernels.PagedRow{Pos: i, Table: table})
		st.LogitRows = append(st.LogitRows, i)
	}
	got, err := p.Run(st)
	if err != nil {
		t.Fatal(err)
	}
	var maxd float64
	for i := range want {
		maxd = math.Max(maxd, math.Abs(float64(got[i]-want[i])))
	}
	if maxd > tol {
		t.Errorf("prompt logits differ by %g > %g", maxd, tol)
	}
	logits := got[(len(rc.PromptIDs)-1)*V:]
	pos := len(rc.PromptIDs)
	for s, id := range rc.GreedyIDs {
		if s > 0 {
			st := &exec.Step{Tokens: []int{rc.GreedyIDs[s-1]}, Rows: []kernels.PagedRow{{Pos: pos, Table: table}},
				LogitRows: []int{0}, KV: st.KV}
			if logits, err = p.Run(st); err != nil {
				t.Fatal(err)
			}
			pos++
		}
		if a := argmax(logits); a != id {
			t.Fatalf("step %d: argmax %d, reference %d", s, a, id)
		}
		if d := math.Abs(float64(logits[id]) - rc.GreedyLogits[s]); d > tol {
			t.Fatalf("step %d: chosen logit differs by %g > %g", s, d, tol)
		}
	}
	t.Logf("prompt max |Δlogit| %.3g, %d greedy steps equal", maxd, len(rc.GreedyIDs))
}
