// Tests that a run can name a Qwen architecture (Config.Arch): qwen2 and qwen3 train 5 steps
// through Run as `llmcloud train` does, and their GGUF and Hugging Face exports open with
// loader as that architecture and give the trainer's logits.
package train

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

func TestRunQwenExport(t *testing.T) {
	dataDir := prepare(t, kibText, kibText[100:800])
	for _, arch := range []string{"qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			exp := t.TempDir()
			c := tinyConfig(dataDir, t.TempDir())
			c.Arch, c.Steps, c.Warmup, c.EvalEvery, c.Tied = arch, 5, 1, 0, arch == "qwen3"
			c.ExportGGUF, c.ExportHF = filepath.Join(exp, "m.gguf"), filepath.Join(exp, "hf")
			tr := newTrainer(t, c)
			if tr.Model.Arch != arch || !tr.Model.RopeNeoX || tr.Model.QKVBias != (arch == "qwen2") || tr.Model.QKNorm != (arch == "qwen3") {
				t.Fatalf("model %+v", tr.Model)
			}
			if _, err := tr.Run(context.Background(), RunOptions{Progress: io.Discard, PeakFLOPS: 1e9}); err != nil {
				t.Fatal(err)
			}
			if tr.StepNum() != 5 {
				t.Fatalf("trained %d steps", tr.StepNum())
			}
			B, T := c.Batch, c.Seq
			tokens := make([]int32, B*T)
			for i := range tokens {
				tokens[i] = int32(kibText[i%len(kibText)])
			}
			tr.Net.Forward(tokens, nil, B, T)
			ref := tr.Net.Logits()
			for _, path := range []string{c.ExportGGUF, c.ExportHF} {
				b, err := loader.Open(path, loader.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if b.Model.Config != tr.Model {
					t.Errorf("%s: config %+v, trained %+v", path, b.Model.Config, tr.Model)
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
				b.Close()
				t.Logf("%s %s: max |logit diff| %.3g", arch, filepath.Base(path), worst)
				if worst > 1e-4 {
					t.Errorf("%s: logits differ from the trainer's by %.3g > 1e-4", path, worst)
				}
			}
		})
	}
}
