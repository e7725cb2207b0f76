// Tests of training a mixture of experts (Mixtral-style: llama with experts): a tiny MoE
// trained a few dozen steps lowers its validation loss, logs its routers' load-balancing loss,
// and its GGUF export opens with loader as the same model with the trainer's logits; bad
// expert settings and the parallel modes that do not split experts are errors naming the flag.
package train

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

func TestRunMoE(t *testing.T) {
	dataDir := prepare(t, strings.Repeat(kibText, 4), kibText[100:800])
	c := tinyConfig(dataDir, t.TempDir())
	c.Experts, c.ExpertsUsed, c.ExpertFFN = 4, 2, 32
	c.Steps, c.Warmup, c.EvalEvery = 40, 4, 0
	c.ExportGGUF = filepath.Join(t.TempDir(), "moe.gguf")
	tr := newTrainer(t, c)
	if tr.Model.Experts != 4 || tr.Model.ExpertsUsed != 2 || !tr.Model.ExpertsNorm || tr.Model.ExpertWidth() != 32 {
		t.Fatalf("model %+v", tr.Model)
	}
	before, _, _, err := tr.Eval()
	if err != nil {
		t.Fatal(err)
	}
	var aux []float32
	sum, err := tr.Run(context.Background(), RunOptions{Progress: io.Discard, PeakFLOPS: 1e9,
		OnStep: func(s StepStats) { aux = append(aux, s.AuxLoss) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("validation loss %.4f -> %.4f; aux loss step 1 %.4f, step %d %.4f", before, sum.ValLoss, aux[0], len(aux), aux[len(aux)-1])
	if !(sum.ValLoss < before-0.5) {
		t.Errorf("validation loss %.4f -> %.4f: did not fall by 0.5", before, sum.ValLoss)
	}
	for i, a := range aux { // E·Σ f_e·P_e: k when even, at most E
		if !(a >= 1 && a <= 4) || math.IsNaN(float64(a)) {
			t.Fatalf("step %d: aux loss %v outside [1, 4]", i+1, a)
		}
	}
	B, T := c.Batch, c.Seq
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(kibText[i%len(kibText)])
	}
	tr.Net.Forward(tokens, nil, B, T)
	ref := tr.Net.Logits()
	b, err := loader.Open(c.ExportGGUF, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Model.Config != tr.Model {
		t.Errorf("exported config %+v, trained %+v", b.Model.Config, tr.Model)
	}
	V, worst := tr.Model.Vocab, 0.0
	for s := 0; s < B; s++ {
		ids := make([]int, T)
		for i := range ids {
			ids[i] = int(tokens[s*T+i])
		}
		lg, err := b.Model.Forward(b.Model.NewCache(T), ids, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range lg {
			worst = max(worst, math.Abs(float64(v-ref[s*T*V+i])))
		}
	}
	if worst > 1e-4 {
		t.Errorf("exported logits differ from the trainer's by %.3g > 1e-4", worst)
	}
}

func TestMoEConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		set  func(c *Config)
		want string
	}{
		{func(c *Config) { c.Experts, c.ExpertsUsed = 4, 5 }, "--experts-used = 5"},
		{func(c *Config) { c.Experts, c.ExpertsUsed = 4, 0 }, "--experts-used = 0"},
		{func(c *Config) { c.ExpertsUsed = 2 }, "need --experts"},
		{func(c *Config) { c.Experts, c.ExpertsUsed = -1, 1 }, "--experts = -1"},
		{func(c *Config) { c.Experts, c.ExpertsUsed, c.ExpertFFN = 4, 2, -8 }, "--expert-ffn = -8"},
		{func(c *Config) { c.Experts, c.ExpertsUsed, c.MoEAuxCoef = 4, 2, -1 }, "--moe-aux-loss-coef"},
		{func(c *Config) { c.Experts, c.ExpertsUsed, c.Arch = 4, 2, "qwen2" }, "--arch qwen2 has no mixture-of-experts"},
		{func(c *Config) { c.Arch = "qwen2moe" }, "--arch qwen2moe is a mixture of experts"},
		{func(c *Config) { c.Experts, c.ExpertsUsed, c.TP = 4, 2, 2 }, "--tp 2"},
		{func(c *Config) { c.Experts, c.ExpertsUsed, c.PP = 4, 2, 2 }, "--pp 2"},
	} {
		c := tinyConfig("d", "o")
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}
