package graph

import (
	"errors"
	"testing"
)

const costGraph = `graph cost {
  input %tokens: i32[n]
  weight %emb: q8_0[100,64]
  weight %w: q8_0[96,64]
  weight %wk: f16[32,64]
  weight %nw: f32[64]
  %x: f32[n,64] = embedding(%emb, %tokens)
  %h: f32[n,64] = rms_norm(%x, %nw) {eps=1e-05}
  %q: f32[n,96] = matmul(%h, %w)
  %k: f32[n,32] = matmul(%h, %wk)
  %q3: f32[n,96], %k3: f32[n,32] = matmul_multi(%h, %w, %wk)
  %o: f32[n,96] = attention(%q, %k, %k) {layer=0, heads=3, kv_heads=1, head_dim=32, window=3}
  %s: f32[n,96] = swiglu(%q, %o)
  output %s, %q3, %k3
}`

func TestNodeCost(t *testing.T) {
	g, err := Parse(costGraph)
	if err != nil {
		t.Fatal(err)
	}
	env := CostEnv{Sym: map[string]int{"n": 5}, Context: []int{1, 2, 7, 8, 9}}
	want := map[string]Cost{
		// 5 rows of 64 Q8_0 (2 blocks of 34 bytes), ids, 5x64 f32 out
		"embedding": {0, 5*68 + 5*4 + 5*64*4},
		"rms_norm":  {4 * 5 * 64, 5*64*4*2 + 64*4},
		// 2·5·96·64; Q8_0 weight 96 rows of 68 bytes; x; out
		"q": {2 * 5 * 96 * 64, 96*68 + 5*64*4 + 5*96*4},
		// F16 weight 32x64x2 bytes
		"k": {2 * 5 * 32 * 64, 32*64*2 + 5*64*4 + 5*32*4},
		// context 1+2+3+3+3 (window 3) = 12 positions
		"attention": {4*3*32*12 + 5*3*12, (5*96+5*32*2+5*96)*4 + 2*4*32*12 + 2*4*32*5},
		"swiglu":    {6 * 5 * 96, 3 * 5 * 96 * 4},
		// x read once for both weights
		"matmul_multi": {2*5*96*64 + 2*5*32*64, 96*68 + 32*64*2 + 5*64*4 + 5*96*4 + 5*32*4},
	}
	for _, n := range g.Nodes {
		key := n.Op
		if n.Op == "matmul" {
			key = n.Outs[0].Name
		}
		w, ok := want[key]
		if !ok {
			continue
		}
		c, err := NodeCost(n, env)
		if err != nil {
			t.Fatal(err)
		}
		if c != w {
			t.Errorf("%s: cost %+v, want %+v", key, c, w)
		}
		delete(want, key)
	}
	if len(want) > 0 {
		t.Errorf("nodes not costed: %v", want)
	}
	total, err := GraphCost(g, env)
	if err != nil || total.FLOPs <= 2*5*96*64 {
		t.Errorf("graph cost %+v, %v", total, err)
	}
	// Without context lengths, row i reads i+1 positions (window 3: 1+2+3+3+3 as well).
	for _, n := range g.Nodes {
		if n.Op == "attention" {
			a, _ := NodeCost(n, env)
			b, _ := NodeCost(n, CostEnv{Sym: env.Sym})
			c, _ := NodeCost(n, CostEnv{Sym: env.Sym, Context: []int{1, 1, 1, 1, 1}})
			if a != b || c == a || c.FLOPs != 4*3*32*5+5*3*5 {
				t.Errorf("context lengths: given %+v, default %+v, all 1 %+v", a, b, c)
			}
		}
	}
}

func TestNodeCostErrors(t *testing.T) {
	g, err := Parse(costGraph)
	if err != nil {
		t.Fatal(err)
	}
	var ne *NodeError
	if _, err := NodeCost(g.Nodes[2], CostEnv{}); !errors.As(err, &ne) || ne.Node != "%q" {
		t.Errorf("unbound n: %v", err)
	}
	for _, n := range g.Nodes {
		if n.Op == "attention" {
			if _, err := NodeCost(n, CostEnv{Sym: map[string]int{"n": 5}, Context: []int{1}}); err == nil {
				t.Error("1 context length for 5 rows accepted")
			}
		}
	}
	n := &Node{Op: "mystery", Outs: g.Nodes[0].Outs}
	if _, err := NodeCost(n, CostEnv{Sym: map[string]int{"n": 5}}); err == nil {
		t.Error("an op without a rule got a cost")
	}
}
