// Tests of training the families beyond Llama and Qwen: a tiny Gemma 2, Gemma 3 and Phi-3,
// each with a sliding window that binds at the training length, trained a few dozen steps,
// lower their validation loss, and their GGUF export opens with loader as the same model
// whose serving forward gives the trainer's logits; the family settings are validated.
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

func TestRunFamilies(t *testing.T) {
	dataDir := prepare(t, strings.Repeat(kibText, 4), kibText[100:800])
	for _, tc := range []struct {
		arch string
		set  func(c *Config)
	}{
		{"gemma2", func(c *Config) { c.Window, c.AttnSoftcap, c.FinalSoftcap, c.QueryScalar = 6, 5, 10, 4 }},
		{"gemma3", func(c *Config) { c.Window, c.SlidingPattern = 6, 2 }},
		{"phi3", func(c *Config) { c.Window = 6 }},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			c := tinyConfig(dataDir, t.TempDir())
			c.Arch = tc.arch
			tc.set(&c)
			c.Steps, c.Warmup, c.EvalEvery = 40, 4, 0
			c.ExportGGUF = filepath.Join(t.TempDir(), tc.arch+".gguf")
			tr := newTrainer(t, c)
			if tr.Model.Arch != tc.arch || tr.Model.SlidingWindow != 6 {
				t.Fatalf("model %+v", tr.Model)
			}
			before, _, _, err := tr.Eval()
			if err != nil {
				t.Fatal(err)
			}
			sum, err := tr.Run(context.Background(), RunOptions{Progress: io.Discard, PeakFLOPS: 1e9})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: validation loss %.4f -> %.4f", tc.arch, before, sum.ValLoss)
			if !(sum.ValLoss < before-0.5) {
				t.Errorf("validation loss %.4f -> %.4f: did not fall by 0.5", before, sum.ValLoss)
			}
			checkExportedLogits(t, tr, c)
		})
	}
}

// checkExportedLogits compares the trainer's logits with the serving forward of its export.
func checkExportedLogits(t *testing.T, tr *Trainer, c Config) {
	t.Helper()
	B, T := c.Batch, c.Seq
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(kibText[(7*i)%len(kibText)])
	}
	tr.Net.Forward(tokens, nil, B, T)
	ref := tr.Net.Logits()
	b, err := loader.Open(c.ExportGGUF, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Model.Config.Arch != tr.Model.Arch || b.Model.Config.SlidingWindow != tr.Model.SlidingWindow ||
		b.Model.Config.AttnSoftcap != tr.Model.AttnSoftcap || b.Model.Config.AttnScalar != tr.Model.AttnScalar {
		t.Errorf("exported config %+v, trained %+v", b.Model.Config, tr.Model)
	}
	V, worst, scale := tr.Model.Vocab, 0.0, 0.0
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
			scale = max(scale, math.Abs(float64(v)))
		}
	}
	t.Logf("exported logits: max |difference| from the trainer's %.3g (max |logit| %.3g)", worst, scale)
	if worst > 1e-4 {
		t.Errorf("exported logits differ from the trainer's by %.3g > 1e-4", worst)
	}
}

func TestFamilyConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		set  func(c *Config)
		want string
	}{
		{func(c *Config) { c.Window = 8 }, "--window applies to"},
		{func(c *Config) { c.Arch, c.AttnSoftcap = "phi3", 5 }, "--attn-softcap applies to"},
		{func(c *Config) { c.Arch, c.SlidingPattern = "gemma2", 2 }, "--sliding-pattern applies to"},
		{func(c *Config) { c.Arch, c.Window = "gemma2", -1 }, "--window = -1"},
		{func(c *Config) { c.Arch, c.QueryScalar = "gemma3", math.NaN() }, "--query-scalar = NaN"},
		{func(c *Config) { c.Arch, c.TP = "gemma2", 2 }, "--tp 2"},
		{func(c *Config) { c.Arch, c.PP = "phi3", 2 }, "--pp 2"},
	} {
		c := tinyConfig("d", "o")
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}
