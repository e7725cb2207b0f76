package quant

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/quant/calib"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

func planModel(t *testing.T, p *convert.Plan) *model.Model {
	t.Helper()
	ws := map[string]*tensor.Tensor{}
	for _, pt := range p.Tensors {
		x, err := pt.Load()
		if err != nil {
			t.Fatal(err)
		}
		ws[pt.Name] = x
	}
	m, err := model.New(p.Config, ws)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAWQFoldKeepsFunction: the scales AWQ folds into the norms and into v's and up's rows
// leave the float model's logits unchanged (up to f32 rounding), and the search scaled
// something (alpha > 0 somewhere).
func TestAWQFoldKeepsFunction(t *testing.T) {
	o := synth.Options{Arch: "llama", Dim: 256, Layers: 2, Heads: 4, KVHeads: 4, FFN: 256, Vocab: 260, CtxLen: 64, Seed: 9, Std: 0.1}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	m := planModel(t, p)
	ids := make([]int, 128)
	for i := range ids {
		ids[i] = (i*13 + 5) % 250
	}
	col, err := calib.Run(m, ids, 1, calib.Options{Ctx: 32, Samples: 64})
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	if _, err := Prepare(p, Calibration{Stats: col.ByW}, Options{Method: "awq", Type: tensor.Q4_K,
		Log: func(s string) { logs = append(logs, s) }}); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 8 { // 2 layers x (qkv, o, gate/up, down)
		t.Errorf("%d groups searched, want 8: %q", len(logs), logs)
	}
	changed := false
	norm, _ := func() (*tensor.Tensor, error) {
		for _, pt := range p.Tensors {
			if pt.Name == "blk.0.attn_norm.weight" {
				return pt.Load()
			}
		}
		return nil, nil
	}()
	nv, _ := norm.Float32()
	for _, v := range nv {
		changed = changed || v != 1
	}
	folded := planModel(t, p)
	prompt := ids[:20]
	a, err := m.Forward(m.NewCache(32), prompt, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := folded.Forward(folded.NewCache(32), prompt, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
	}
	if worst > 1e-3 {
		t.Errorf("folded model's logits differ by %g", worst)
	}
	if !changed {
		t.Errorf("attn_norm unchanged: no scale folded (%q)", logs)
	}
}
