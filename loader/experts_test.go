// Tests of expert counts in model files: a dense model (these files' tensors) declaring experts
// is refused with a message naming the count (the llama family runs Mixtral's experts, with
// other tensors), and absurd counts (2^32-1, more experts per token than experts, none per
// token) with one naming the value, each within 1 s and 100 MB. The files come from the
// generator of internal/absurd.
package loader_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/absurd"
	"github.com/llmcloud/llmcloud/loader"
)

const moeRefused = "(expert_count = %s, expert_used_count = 2: a mixture-of-experts feed-forward)"

func TestExpertCounts(t *testing.T) {
	dir := t.TempDir()
	base, hf, err := absurd.Base(dir)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	out := func(ext string) string {
		seq++
		return filepath.Join(dir, fmt.Sprintf("experts-%02d%s", seq, ext))
	}
	g := func(path, key string, v gguf.Value) string {
		o := out(".gguf")
		if err := absurd.GGUF(path, o, key, v); err != nil {
			t.Fatal(err)
		}
		return o
	}
	h := func(src, key string, v any) string {
		o := out("")
		if err := absurd.HF(src, o, key, v); err != nil {
			t.Fatal(err)
		}
		return o
	}
	moe := func(n string) string { return strings.ReplaceAll(moeRefused, "%s", n) }
	cases := []struct {
		name, path string
		wantErr    string // "" = loads (a dense model)
	}{
		{"gguf experts 8 of 2", g(g(base, "llama.expert_count", gguf.U32(8)), "llama.expert_used_count", gguf.U32(2)), moe("8")},
		{"gguf experts 8, used absent", g(base, "llama.expert_count", gguf.U32(8)),
			"llama.expert_used_count = 0, a mixture of llama.expert_count = 8 experts must use 1 to 8 per token"},
		{"gguf experts 2^32-1", g(base, "llama.expert_count", gguf.U32(1<<32-1)), "llama.expert_count = 4294967295 out of range"},
		{"gguf experts 2^64-1", g(base, "llama.expert_count", gguf.U64(1<<64-1)), "llama.expert_count = 18446744073709551615 out of range"},
		{"gguf experts -1", g(base, "llama.expert_count", gguf.I32(-1)), "llama.expert_count = -1 is not a count"},
		{"gguf experts a string", g(base, "llama.expert_count", gguf.Str("8")), `llama.expert_count = "8" is not a count`},
		{"gguf used 9 of 8", g(g(base, "llama.expert_count", gguf.U32(8)), "llama.expert_used_count", gguf.U32(9)),
			"llama.expert_used_count = 9, more experts per token than llama.expert_count = 8"},
		{"gguf used 2^32-1", g(g(base, "llama.expert_count", gguf.U32(8)), "llama.expert_used_count", gguf.U32(1<<32-1)),
			"llama.expert_used_count = 4294967295 out of range"},
		{"gguf olmoe", g(g(g(base, "general.architecture", gguf.Str("olmoe")), "olmoe.expert_count", gguf.U32(128)),
			"olmoe.expert_used_count", gguf.U32(8)), `unsupported architecture "olmoe" (a mixture of experts, olmoe.expert_count = 128)`},
		{"gguf experts 0 (dense)", g(g(base, "llama.expert_count", gguf.U32(0)), "llama.expert_used_count", gguf.U32(0)), ""},
		{"hf mixtral", h(h(hf, "model_type", "mixtral"), "num_local_experts", 8),
			"config.json num_experts_per_tok = 0, a mixture of config.json num_local_experts = 8 experts must use 1 to 8 per token"},
		{"hf mixtral of dense tensors", h(h(h(hf, "model_type", "mixtral"), "num_local_experts", 8), "num_experts_per_tok", 2), moe("8")},
		{"hf llama with 8 of 2 experts", h(h(hf, "num_local_experts", 8), "num_experts_per_tok", 2), moe("8")},
		{"hf num_experts 128", h(h(h(hf, "model_type", "olmoe"), "num_experts", 128), "num_experts_per_tok", 8),
			`model_type "olmoe" is not supported (a mixture of 128 experts)`},
		{"hf qwen2_moe norm_topk_prob", h(h(h(h(hf, "model_type", "qwen2_moe"), "num_experts", 4), "num_experts_per_tok", 2), "norm_topk_prob", true),
			"config.json norm_topk_prob = true"},
		{"hf qwen2_moe mlp_only_layers", h(h(h(h(hf, "model_type", "qwen2_moe"), "num_experts", 4), "num_experts_per_tok", 2), "mlp_only_layers", []any{1}),
			"config.json mlp_only_layers = [1]"},
		{"hf qwen2_moe of dense tensors", h(h(h(hf, "model_type", "qwen2_moe"), "num_experts", 4), "num_experts_per_tok", 2),
			"tensor model.layers.0.mlp.gate_proj.weight has no place in a qwen2moe model"},
		{"hf experts 2^32-1", h(hf, "num_local_experts", 1<<32-1), "num_local_experts = 4294967295 out of range"},
		{"hf experts 1e30", h(hf, "num_experts", 1e30), "num_experts = 1e+30 out of range"},
		{"hf experts -4", h(hf, "num_experts", -4), "num_experts = -4 out of range"},
		{"hf experts 2.5", h(hf, "num_experts", 2.5), "num_experts = 2.5 out of range"},
		{"hf experts a string", h(hf, "num_local_experts", "8"), `num_local_experts = "8" is not a count`},
		{"hf used 9 of 8", h(h(hf, "num_local_experts", 8), "num_experts_per_tok", 9),
			"num_experts_per_tok = 9, more experts per token than config.json num_local_experts = 8"},
		{"hf experts null (dense)", h(hf, "num_local_experts", nil), ""},
		{"hf experts 0, per token 2 (dense)", h(h(hf, "num_experts", 0), "num_experts_per_tok", 2), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			d, alloc := measure(func() {
				var b *loader.Bundle
				if b, err = loader.Open(tc.path, loader.Options{}); err == nil {
					b.Close()
				}
			})
			if d > time.Second || alloc > 100<<20 {
				t.Errorf("took %v and allocated %d MB", d, alloc>>20)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("a dense model: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			t.Logf("%v (%v, %d KB)", err, d, alloc>>10)
		})
	}
}
