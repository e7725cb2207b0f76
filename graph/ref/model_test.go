// Tests of ref against the serving forward pass: the graph of model.BuildGraph run by ref over
// two sequences laid end to end (logit_rows = every row) gives model.Forward's logits of each
// sequence, run alone through its KV cache, on random llama (GQA, Llama 3 RoPE scaling),
// qwen2 (biases, NeoX RoPE, tied) and qwen3 (q/k norms, head_dim != dim/heads) models.
package ref_test

import (
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// synthModel is a synth model of arch at tiny dimensions, its N(0, 0.02) weights scaled by 10
// (so attention is far from uniform) and its norms set to 1 + N(0, 0.1).
func synthModel(t *testing.T, o synth.Options) *model.Model {
	t.Helper()
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(int64(o.Seed)))
	ws := map[string]*tensor.Tensor{}
	for name, shape := range cfg.Shapes() {
		w := synth.Generate(name, shape, o.Seed)
		v, _ := w.Float32()
		for i := range v {
			if strings.Contains(name, "norm") {
				v[i] = float32(1 + 0.1*r.NormFloat64())
			} else {
				v[i] *= 10
			}
		}
		data := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
		}
		ws[name] = &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: data}
	}
	m, err := model.New(cfg, ws)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refValues gives ref the model's weights (and Llama 3's RoPE divisors when the graph wants them).
func refValues(t *testing.T, m *model.Model) map[string]*ref.Tensor {
	t.Helper()
	vals := map[string]*ref.Tensor{}
	for name, w := range m.Weights {
		v, err := ref.FromTensor(w)
		if err != nil {
			t.Fatal(err)
		}
		vals[name] = v
	}
	if c := m.Config; c.RopeScaling != nil && vals[model.RopeFreqsName] == nil {
		f, err := kernels.Llama3Factors(c.HeadDim, c.RopeTheta, *c.RopeScaling)
		if err != nil {
			t.Fatal(err)
		}
		vals[model.RopeFreqsName] = ref.FromF32([]int{len(f)}, f)
	}
	return vals
}

// batchInputs lays seqs end to end: tokens, positions restarting at 0, and every row's logits.
func batchInputs(vals map[string]*ref.Tensor, seqs [][]int32) {
	var toks, pos, rows []int32
	for _, s := range seqs {
		for i, tk := range s {
			rows = append(rows, int32(len(toks)))
			toks, pos = append(toks, tk), append(pos, int32(i))
		}
	}
	n := len(toks)
	vals[model.InputTokens] = ref.Ints([]int{n}, toks)
	vals[model.InputPositions] = ref.Ints([]int{n}, pos)
	vals[model.InputLogitRows] = ref.Ints([]int{n}, rows)
}

func TestRefMatchesModelForward(t *testing.T) {
	cases := []synth.Options{
		{Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, FFN: 64, Vocab: 300, Seed: 1},
		{Arch: "qwen2", Dim: 32, Layers: 2, Heads: 4, KVHeads: 1, FFN: 64, Vocab: 300, Tied: true, Seed: 2},
		{Arch: "qwen3", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 64, Vocab: 300, Seed: 3},
	}
	seqs := [][]int32{{5, 17, 290, 3, 3, 44, 101}, {7, 8, 9, 250, 1}}
	for i, o := range cases {
		t.Run(o.Arch, func(t *testing.T) {
			m := synthModel(t, o)
			if i == 0 {
				m.Config.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 4}
				var err error
				if m, err = model.New(m.Config, m.Weights); err != nil {
					t.Fatal(err)
				}
			}
			m.Pool = kernels.Serial
			g, err := m.Graph()
			if err != nil {
				t.Fatal(err)
			}
			vals := refValues(t, m)
			batchInputs(vals, seqs)
			out, err := ref.Run(g, vals)
			if err != nil {
				t.Fatal(err)
			}
			got := out[0].F
			V := m.Config.Vocab
			var maxAbs, maxDiff float64
			row := 0
			for _, s := range seqs {
				toks := make([]int, len(s))
				for j, tk := range s {
					toks[j] = int(tk)
				}
				want, err := m.Forward(m.NewCache(16), toks, 0, true)
				if err != nil {
					t.Fatal(err)
				}
				for j, w := range want {
					maxAbs = math.Max(maxAbs, math.Abs(float64(w)))
					maxDiff = math.Max(maxDiff, math.Abs(got[row*V+j]-float64(w)))
				}
				row += len(s)
			}
			rel := maxDiff / maxAbs
			t.Logf("%s: max |logit| %.3g, max diff %.3g, relative %.3g", o.Arch, maxAbs, maxDiff, rel)
			if rel > 1e-4 || maxAbs < 0.1 {
				t.Errorf("ref vs model.Forward: relative difference %.3g (max |logit| %.3g)", rel, maxAbs)
			}
		})
	}
}
