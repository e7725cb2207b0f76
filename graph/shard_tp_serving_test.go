// Tests of ShardTPServing: the serving graph of a tensor-parallel rank has no tp_copy, one
// all-reduce per row-parallel matmul and one for the embedding, the whole logits gathered as
// its output, and still takes the serving passes' fusions. Sizes that do not divide are
// refused naming the numbers.
package graph_test

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
)

func TestShardTPServing(t *testing.T) {
	llama := model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 8, KVHeads: 4, HeadDim: 4, FFN: 24,
		Vocab: 64, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5}
	tied, qwen2, qwen3 := llama, llama, llama
	tied.Tied = true
	qwen2.Arch, qwen2.QKVBias = "qwen2", true
	qwen3.Arch, qwen3.QKNorm, qwen3.RopeNeoX = "qwen3", true, true
	for _, cfg := range []model.Config{llama, tied, qwen2, qwen3} {
		g, err := model.BuildGraph(&cfg, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{2, 4} {
			sg, err := graph.ShardTPServing(g, size-1, size, graph.TPOptions{})
			if err != nil {
				t.Fatalf("%s tied %v size %d: %v", cfg.Arch, cfg.Tied, size, err)
			}
			count := map[string]int{}
			for _, n := range sg.Nodes {
				count[n.Op]++
			}
			if count["tp_copy"] != 0 || count["all_reduce_sum"] != 2*cfg.Layers+1 || count["all_gather_last"] != 1 || count["embedding_shard"] != 1 {
				t.Errorf("%s tied %v size %d: ops %v", cfg.Arch, cfg.Tied, size, count)
			}
			out := sg.Outputs[0]
			if out.Def.Op != "all_gather_last" || out.Type.Shape.Last().N != cfg.Vocab || out.Def.Args[0].Type.Shape.Last().N != cfg.Vocab/size {
				t.Errorf("%s size %d: output %s = %s of %v", cfg.Arch, size, out.Type, out.Def.Op, out.Def.Args[0].Type)
			}
			fg, _, err := graph.RunPasses(sg, graph.ServingPipeline()...)
			if err != nil {
				t.Fatalf("%s size %d: serving passes: %v", cfg.Arch, size, err)
			}
			fused := map[string]int{}
			for _, n := range fg.Nodes {
				fused[n.Op]++
			}
			if fused["matmul_multi"] != 2*cfg.Layers || fused["qkv_rope"] != cfg.Layers || fused["swiglu"] != cfg.Layers {
				t.Errorf("%s size %d: the shard lost fusions: %v", cfg.Arch, size, fused)
			}
		}
		one, err := graph.ShardTPServing(g, 0, 1, graph.TPOptions{})
		if err != nil || graph.String(one) != graph.String(g) {
			t.Errorf("%s: size 1 is not a copy (%v)", cfg.Arch, err)
		}
	}
	g, err := model.BuildGraph(&llama, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.ShardTPServing(g, 0, 3, graph.TPOptions{}); err == nil || !strings.Contains(err.Error(), "size 3 does not divide") {
		t.Errorf("size 3 of 8 heads: %v", err)
	}
	tp, ep := graph.TPOptions{}, graph.TPOptions{ExpertParallel: true}
	for _, c := range []struct {
		name   string
		tp, ep int
	}{{"blk.0.attn_q.weight", 0, 0}, {"blk.0.ffn_down.weight", 1, 1}, {"blk.0.attn_norm.weight", -1, -1},
		{"blk.1.ffn_gate_exps.weight", 1, 0}, {"blk.1.ffn_up_exps.weight", 1, 0}, {"blk.1.ffn_down_exps.weight", 2, 0},
		{"blk.1.ffn_gate_inp.weight", -1, -1}, {"blk.1.ffn_up_shexp.weight", 0, 0}, {"blk.1.ffn_down_shexp.weight", 1, 1},
		{"blk.1.ffn_gate_inp_shexp.weight", -1, -1}} {
		if a, b := graph.TPSplitDim(c.name, tp), graph.TPSplitDim(c.name, ep); a != c.tp || b != c.ep {
			t.Errorf("TPSplitDim(%s): %d, expert-parallel %d; want %d, %d", c.name, a, b, c.tp, c.ep)
		}
	}
}
