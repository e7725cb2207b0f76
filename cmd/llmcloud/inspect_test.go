// Tests of the inspect command through runMain on GGUF, Hugging Face and llama2.c inputs, in
// text and JSON.
package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestInspectCommand(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	if _, errs, code := runCmd(t, "synth", "--arch", "qwen2", "--dim", "32", "--heads", "2", "--layers", "1", "--tied", "-o", hf); code != 0 {
		t.Fatal(errs)
	}
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	gg := fixture.Path(t, "models", "rand3M", "rand3M-q4_k_m.gguf")
	cases := []struct {
		path string
		want []string
	}{
		{gg, []string{"gguf, architecture llama", "dim 256, layers 4, heads 8, kv heads 2", "blk.3.ffn_down.weight", "Q4_K",
			"3279104 parameters", "tokenizer.ggml.tokens", "512 elements: \"<unk>\"", "general.file_type", "tokenizer: llama"}},
		{hf, []string{"hf, architecture qwen2", "qkv bias true", "model.layers.0.self_attn.q_proj.bias", "model.embed_tokens.weight",
			"F32", "config.model_type", "tokenizer: gpt2 (pre gpt-2), 258 tokens"}},
		{bin, []string{"llama2c, architecture llama", "dim 64, layers 5", "header.n_kv_heads", "blk.4.ffn_up.weight", "[172 64]",
			"tokenizer: llama", "512 tokens"}},
	}
	for _, tc := range cases {
		out, errs, code := runCmd(t, "inspect", tc.path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.path, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.path, w, out)
			}
		}
		out, errs, code = runCmd(t, "inspect", "--json", tc.path)
		if code != 0 {
			t.Fatalf("%s --json: exit %d: %s", tc.path, code, errs)
		}
		var r struct {
			Format      string `json:"format"`
			TotalParams int64  `json:"total_params"`
			Tensors     []struct {
				Name  string `json:"name"`
				Bytes int64  `json:"bytes"`
			} `json:"tensors"`
			Tokenizer *struct{ Tokens int } `json:"tokenizer"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s --json: %v", tc.path, err)
		}
		if r.Format == "" || r.TotalParams == 0 || len(r.Tensors) == 0 || r.Tokenizer == nil {
			t.Errorf("%s --json: %+v", tc.path, r)
		}
	}
	// A vocabulary-only GGUF: no model, but the tensors (none) and tokenizer are described.
	vocab := fixture.Path(t, "models", "llamacpp-vocab", "ggml-vocab-gpt-2.gguf")
	// The report is printed, but the exit status is 1: the file is not a usable model.
	out, errs, code := runCmd(t, "inspect", vocab)
	if code != 1 || !strings.Contains(out, "cannot load as a model") || !strings.Contains(out, "tokenizer: gpt2") ||
		!strings.Contains(errs, "cannot be loaded as a model") {
		t.Errorf("vocab GGUF: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := runCmd(t, "inspect", filepath.Join(dir, "nothing")); code != 1 || !strings.Contains(errs, "nothing") {
		t.Errorf("missing file: exit %d %q", code, errs)
	}
}
