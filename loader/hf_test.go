// Tests of openHF: a written Hugging Face directory opens with its tokenizer, template and
// defaults, and each kind of broken directory gives one error naming the file at fault.
package loader_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/synth"
)

func writeHF(t *testing.T) string {
	t.Helper()
	o := synth.Options{Arch: "qwen2", Dim: 32, Layers: 1, Heads: 2, KVHeads: 1, Tied: true, Seed: 4, ChatTemplate: "{{ messages }}"}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.7
	p.Defaults.Temperature = &temp
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := convert.WriteHF(dir, p, convert.Options{Type: "bf16"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenHF(t *testing.T) {
	dir := writeHF(t)
	b, err := loader.Open(dir, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Format != loader.HF || b.Name != "tiny" || b.ChatTemplate != "{{ messages }}" {
		t.Errorf("format %s name %q template %q", b.Format, b.Name, b.ChatTemplate)
	}
	if b.Defaults.Temperature == nil || *b.Defaults.Temperature != 0.7 {
		t.Errorf("temperature default %v", b.Defaults.Temperature)
	}
	c := b.Model.Config
	if c.Arch != "qwen2" || !c.QKVBias || !c.RopeNeoX || !c.Tied || c.Vocab != 258 {
		t.Errorf("config %+v", c)
	}
	ids := b.Tok.Encode("hi", true, false)
	if len(ids) != 3 || ids[0] != 256 || b.Tok.Decode(ids) != "hi" {
		t.Errorf("byte tokenizer: %v -> %q", ids, b.Tok.Decode(ids))
	}
}

func TestOpenHFErrors(t *testing.T) {
	cases := []struct {
		name     string
		breakDir func(t *testing.T, dir string)
		want     []string
	}{
		{"truncated safetensors", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-100], 0o644)
		}, []string{"model.safetensors", "truncated"}},
		{"unknown dtype", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			b = bytes.Replace(b, []byte(`"dtype":"BF16"`), []byte(`"dtype":"XF16"`), 1)
			os.WriteFile(p, b, 0o644)
		}, []string{"model.safetensors", "dtype", "XF16"}},
		{"shape disagrees with config", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			b, _ := os.ReadFile(p)
			b = bytes.Replace(b, []byte(`"intermediate_size": 128`), []byte(`"intermediate_size": 96`), 1)
			os.WriteFile(p, b, 0o644)
		}, []string{"model.safetensors", "config.json", "mlp.", "disagrees with config.json"}},
		{"missing tokenizer", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.json"))
		}, []string{"tiny", "no tokenizer"}},
		{"unsupported model_type", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"model_type": "qwen2"`), []byte(`"model_type": "gemma"`), 1), 0o644)
		}, []string{"config.json", "gemma"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeHF(t)
			tc.breakDir(t, dir)
			b, err := loader.Open(dir, loader.Options{})
			if err == nil {
				b.Close()
				t.Fatal("opened a broken directory")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
