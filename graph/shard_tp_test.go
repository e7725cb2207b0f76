// Tests of ShardTP: a Llama graph (also with Qwen's biases or q/k norms) with its loss sharded for rank 1 of 2 has the rank's weight
// shapes, one tp_copy before every group of column-parallel matmuls, an all_reduce_sum after
// every row-parallel one and after the embedding, the vocab-parallel loss, the rank's heads;
// it differentiates, and its text round-trips. A block without the embedding or the head (a
// pipeline stage's middle) shards too, and its ranks' partial results add up to the unsharded
// graph's (run by graph/ref, whose collectives are a group of one). Sizes that do not divide
// are refused.
package graph_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestShardTPLlama(t *testing.T) {
	llama := model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 8, KVHeads: 4, HeadDim: 4, FFN: 24,
		Vocab: 64, CtxLen: 16, RopeTheta: 10000, NormEps: 1e-5}
	tied, qwen2, qwen3 := llama, llama, llama
	tied.Tied = true
	qwen2.Arch, qwen2.QKVBias = "qwen2", true // biases follow their matrix's rows
	qwen3.Arch, qwen3.QKNorm, qwen3.RopeNeoX = "qwen3", true, true
	for _, cfg := range []model.Config{llama, tied, qwen2, qwen3} {
		tied := cfg.Tied
		g, err := model.BuildGraph(&cfg, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		lg, _, err := graph.WithLoss(g, model.OutputLogits, "targets")
		if err != nil {
			t.Fatal(err)
		}
		sg, err := graph.ShardTP(lg, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if graph.String(lg) == graph.String(sg) {
			t.Fatal("ShardTP changed nothing")
		}
		for _, w := range sg.Weights {
			full := lg.Value(w.Name).Type.Shape
			want := append(graph.Shape{}, full...)
			switch {
			case w.Name == "token_embd.weight" || w.Name == "output.weight" || strings.Contains(w.Name, ".attn_q.") ||
				strings.Contains(w.Name, ".attn_k.") || strings.Contains(w.Name, ".attn_v.") ||
				strings.Contains(w.Name, ".ffn_gate.") || strings.Contains(w.Name, ".ffn_up."):
				want[0] = graph.D(full[0].N / 2)
			case strings.Contains(w.Name, "attn_output") || strings.Contains(w.Name, "ffn_down"):
				want[1] = graph.D(full[1].N / 2)
			}
			if !w.Type.Shape.Equal(want) {
				t.Errorf("%s tied %v: %s %v, want %v", cfg.Arch, tied, w.Name, w.Type.Shape, want)
			}
		}
		c := sg.OpCounts()
		L := cfg.Layers
		norms := 0 // q/k norm weights pass a tp_copy: their gradient is reduced over the ranks
		if cfg.QKNorm {
			norms = 2 * L
		}
		for op, n := range map[string]int{"tp_copy": 2*L + 1 + norms, "all_reduce_sum": 2*L + 1, "embedding_shard": 1,
			"cross_entropy_shard": 1, "embedding": 0, "cross_entropy": 0, "matmul": 7*L + 1} {
			if c[op] != n {
				t.Errorf("tied %v: %d %s nodes, want %d", tied, c[op], op, n)
			}
		}
		for _, n := range sg.Nodes {
			switch n.Op {
			case "attention":
				if n.Attrs.Int("heads", 0) != 4 || n.Attrs.Int("kv_heads", 0) != 2 {
					t.Errorf("attention attrs %v, want 4 heads, 2 KV heads", n.Attrs)
				}
			case "embedding_shard", "cross_entropy_shard":
				if n.Attrs.Int("lo", -1) != 32 {
					t.Errorf("%s lo %d, want 32", n.Op, n.Attrs.Int("lo", -1))
				}
			case "all_reduce_sum":
				if n.Attrs.Str("what", "") == "" {
					t.Errorf("%s has no name", n.Name())
				}
			}
		}
		back, err := graph.Parse(graph.String(sg))
		if err != nil || graph.String(back) != graph.String(sg) {
			t.Fatalf("the sharded graph does not round-trip: %v", err)
		}
		gg, err := graph.Grad(sg, sg.Value("loss"), sg.Weights)
		if err != nil {
			t.Fatal(err)
		}
		gc := gg.OpCounts()
		if gc["all_reduce_sum"] != 2*(2*L+1)+norms || gc["cross_entropy_shard_grad"] != 1 || gc["embedding_shard_grad"] != 1 {
			t.Errorf("tied %v: backward ops %v", tied, gc)
		}
		if _, err := graph.Parse(graph.String(gg)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShardTPBlockSums shards an FFN block without the embedding and the head (input x,
// output y = x + down(silu(gate(x))·up(x))) for 2 and 3 ranks: the ranks' results before the
// all-reduce, each computed from that rank's weight shards, add up to the unsharded result.
func TestShardTPBlockSums(t *testing.T) {
	const n, D, F = 3, 4, 6
	b := graph.NewBuilder("ffn")
	x := b.Input("x", graph.T(tensor.F32, graph.D(n), graph.D(D)))
	w := func(name string, r, c int) *graph.Value {
		return b.Weight(name, graph.T(tensor.F32, graph.D(r), graph.D(c)))
	}
	gt := b.Op("matmul", nil, x, w("blk.0.ffn_gate.weight", F, D))
	up := b.Op("matmul", nil, x, w("blk.0.ffn_up.weight", F, D))
	d := b.Op("matmul", nil, b.Op("mul", nil, b.Op("silu", nil, gt), up), w("blk.0.ffn_down.weight", D, F))
	b.Output(b.NamedOp("y", "add", nil, x, d))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	vals := map[string]*ref.Tensor{}
	for _, v := range append(append([]*graph.Value{}, g.Inputs...), g.Weights...) {
		data := make([]float64, v.Type.Shape[0].N*v.Type.Shape[1].N)
		for i := range data {
			data[i] = r.NormFloat64()
		}
		vals[v.Name] = ref.F64([]int{v.Type.Shape[0].N, v.Type.Shape[1].N}, data)
	}
	full, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{2, 3} {
		sum := make([]float64, n*D)
		for rank := 0; rank < size; rank++ {
			sg, err := graph.ShardTP(g, rank, size)
			if err != nil {
				t.Fatal(err)
			}
			rv := map[string]*ref.Tensor{"x": vals["x"]}
			for _, sw := range sg.Weights {
				fw := vals[sw.Name]
				R, C := sw.Type.Shape[0].N, sw.Type.Shape[1].N
				part := make([]float64, 0, R*C)
				for i := 0; i < R; i++ {
					if R < fw.Shape[0] { // rows split
						part = append(part, fw.F[(rank*R+i)*C:(rank*R+i+1)*C]...)
					} else { // columns split
						part = append(part, fw.F[i*fw.Shape[1]+rank*C:i*fw.Shape[1]+(rank+1)*C]...)
					}
				}
				rv[sw.Name] = ref.F64([]int{R, C}, part)
			}
			all, err := ref.RunAll(sg, rv)
			if err != nil {
				t.Fatal(err)
			}
			part := all[sg.Value("y").Def.Args[1].Def.Args[0]] // add(x, all_reduce_sum(part))
			for i, v := range part.F {
				sum[i] += v
			}
		}
		for i := range sum {
			if want := full[0].F[i] - vals["x"].F[i]; math.Abs(sum[i]-want) > 1e-12 {
				t.Fatalf("size %d: element %d: ranks' sum %v, unsharded %v", size, i, sum[i], want)
			}
		}
	}
	if _, err := graph.ShardTP(g, 0, 4); err == nil || !strings.Contains(err.Error(), "does not divide") {
		t.Errorf("size 4 of an FFN of 6: %v, want a refusal", err)
	}
	if _, err := graph.ShardTP(g, 2, 2); err == nil {
		t.Error("rank 2 of 2 accepted")
	}
}
