// Package absurd writes model files with absurd sizes for tests: a tiny valid llama model as a
// GGUF file (the repo's own GGUF writer) and as a Hugging Face directory (synth), each then
// rewritten with one size set to an absurd value. The loader tests and the chaos suite both use it.
package absurd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/synth"
)

// Case is one absurd file or directory. Want is a substring of the loader's error, or "" when
// the model loads with its maximum model length capped by the KV pool (a huge context length).
type Case struct {
	Name, Path, Want string
}

// Base writes a tiny llama model under dir as base.gguf and as the Hugging Face directory hf.
func Base(dir string) (ggufPath, hfDir string, err error) {
	o := synth.Options{Arch: "llama", Dim: 32, Layers: 2, Heads: 2, KVHeads: 1, Seed: 7}
	p, err := o.Plan()
	if err != nil {
		return "", "", err
	}
	ggufPath = filepath.Join(dir, "base.gguf")
	if err := convert.WriteGGUF(ggufPath, p, convert.Options{Type: "f32"}); err != nil {
		return "", "", err
	}
	hfDir = filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, p, convert.Options{Type: "f32"}); err != nil {
		return "", "", err
	}
	return ggufPath, hfDir, nil
}

// GGUF writes out, a copy of the GGUF file base with metadata key set to v (added when absent).
func GGUF(base, out, key string, v gguf.Value) error {
	f, err := gguf.Open(base)
	if err != nil {
		return err
	}
	defer f.Close()
	kvs := append([]gguf.KV(nil), f.KVs...)
	found := false
	for i := range kvs {
		if kvs[i].Key == key {
			kvs[i].Value, found = v, true
		}
	}
	if !found {
		kvs = append(kvs, gguf.KV{Key: key, Value: v})
	}
	return gguf.WriteFile(out, kvs, f.Tensors)
}

// HF copies the directory base to out with config.json's key set to v.
func HF(base, out, key string, v any) error {
	if err := os.CopyFS(out, os.DirFS(base)); err != nil {
		return err
	}
	cfgPath := filepath.Join(out, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	cfg[key] = v
	if raw, err = json.Marshal(cfg); err != nil {
		return err
	}
	return os.WriteFile(cfgPath, raw, 0o644)
}

type ggufCase struct {
	name, key string
	v         gguf.Value
	want      string
}

type hfCase struct {
	name, key string
	v         any
	want      string
}

var ggufCases = []ggufCase{
	{"gguf context 1e7", "llama.context_length", gguf.U32(10_000_000), ""},
	{"gguf context 2^32-1", "llama.context_length", gguf.U32(1<<32 - 1), ""},
	{"gguf context 2^64-1", "llama.context_length", gguf.U64(1<<64 - 1), "context_length"},
	{"gguf layers 1e9", "llama.block_count", gguf.U32(1_000_000_000), "Layers"},
	{"gguf layers 3 (2 in the file)", "llama.block_count", gguf.U32(3), "blk.2"},
	{"gguf heads 0", "llama.attention.head_count", gguf.U32(0), "head_count"},
	{"gguf heads 2^31", "llama.attention.head_count", gguf.U32(1 << 31), "HeadDim = 0"},
	{"gguf dim 2^30", "llama.embedding_length", gguf.U32(1 << 30), "Dim"},
	{"gguf dim -5", "llama.embedding_length", gguf.I32(-5), "embedding_length"},
	{"gguf ffn 2^31", "llama.feed_forward_length", gguf.U32(1 << 31), "FFN"},
	{"gguf ffn mismatch", "llama.feed_forward_length", gguf.U32(96), "ffn_"},
}

var hfCases = []hfCase{
	{"hf max_position_embeddings 2e9", "max_position_embeddings", 2e9, ""},
	{"hf layers 1e9", "num_hidden_layers", 1e9, "Layers"},
	{"hf layers 4096 (2 in the files)", "num_hidden_layers", 4096, "lack"},
	{"hf heads 0", "num_attention_heads", 0, "num_attention_heads"},
	{"hf hidden -64", "hidden_size", -64, "hidden_size"},
	{"hf hidden 2^40", "hidden_size", 1 << 40, "Dim"},
	{"hf intermediate 1e12", "intermediate_size", 1e12, "FFN"},
	{"hf vocab 2^30", "vocab_size", 1 << 30, "Vocab"},
	{"hf vocab mismatch", "vocab_size", 300, "model.embed_tokens.weight"},
	{"hf max_position_embeddings -1", "max_position_embeddings", -1, "max_position_embeddings"},
}

// Cases writes every absurd file and directory under dir (an empty directory) and lists them.
func Cases(dir string) ([]Case, error) {
	base, hf, err := Base(dir)
	if err != nil {
		return nil, err
	}
	var out []Case
	for i, c := range ggufCases {
		p := filepath.Join(dir, fmt.Sprintf("absurd-%02d.gguf", i))
		if err := GGUF(base, p, c.key, c.v); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, Case{c.name, p, c.want})
	}
	for i, c := range hfCases {
		p := filepath.Join(dir, fmt.Sprintf("absurd-hf-%02d", i))
		if err := HF(hf, p, c.key, c.v); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, Case{c.name, p, c.want})
	}
	return out, nil
}
