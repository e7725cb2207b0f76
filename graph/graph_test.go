package graph

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// tinyBlock is one Llama block over a batch of n rows: dim 8, 2 heads of 4, 1 KV head, ffn 16.
func tinyBlock(t testing.TB) *Graph {
	n := Sym("n")
	b := NewBuilder("tiny")
	tok := b.Input("tokens", T(tensor.I32, n))
	pos := b.Input("pos", T(tensor.I32, n))
	embd := b.Weight("token_embd.weight", T(tensor.Q8_0, D(40), D(8)))
	norm := b.Weight("blk.0.attn_norm.weight", T(tensor.F32, D(8)))
	wq := b.Weight("blk.0.attn_q.weight", T(tensor.F16, D(8), D(8)))
	wk := b.Weight("blk.0.attn_k.weight", T(tensor.F16, D(4), D(8)))
	wv := b.Weight("blk.0.attn_v.weight", T(tensor.F16, D(4), D(8)))
	x := b.NamedOp("x.0", "embedding", nil, embd, tok)
	h := b.Op("rms_norm", Attrs{"eps": Float(1e-5)}, x, norm)
	qkv := b.OpN("matmul_multi", nil, []*Value{h, wq, wk, wv}, "q", "k", "v")
	rope := Attrs{"heads": Int(2), "head_dim": Int(4), "theta": Float(10000)}
	q := b.Op("rope", rope, qkv[0], pos)
	krope := Attrs{"heads": Int(1), "head_dim": Int(4), "theta": Float(10000)}
	k := b.Op("rope", krope, qkv[1], pos)
	att := b.Op("attention", Attrs{"layer": Int(0), "heads": Int(2), "kv_heads": Int(1), "head_dim": Int(4)}, q, k, qkv[2])
	y := b.Op("add", nil, x, att)
	b.Output(y)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestPrintParseRoundTrip(t *testing.T) {
	g := tinyBlock(t)
	text := String(g)
	for _, want := range []string{
		"graph tiny {",
		"input %tokens: i32[n]",
		"weight %token_embd.weight: q8_0[40,8]",
		"%x.0: f32[n,8] = embedding(%token_embd.weight, %tokens)",
		"%q: f32[n,8], %k: f32[n,4], %v: f32[n,4] = matmul_multi(",
		"{eps=1e-05}",
		"{head_dim=4, heads=2, theta=10000.0}",
		"output %t",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	g2, err := Parse(text)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if got := String(g2); got != text {
		t.Fatalf("round trip differs:\n%s\nvs\n%s", got, text)
	}
	if len(g2.Nodes) != len(g.Nodes) || g2.OpCounts()["rope"] != 2 {
		t.Fatalf("parsed %d nodes (%v), want %d", len(g2.Nodes), g2.OpCounts(), len(g.Nodes))
	}
}

func TestParseErrorsNameTheNode(t *testing.T) {
	base := String(tinyBlock(t))
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown op", "= rms_norm(", "= rms_nrom(", `node %t0: unknown op "rms_nrom"`},
		{"shape mismatch", "%x.0: f32[n,8] = embedding", "%x.0: f32[n,9] = embedding", "node %x.0 (embedding): result %x.0 declared f32[n,9], the op gives f32[n,8]"},
		{"weight shape", "weight %blk.0.attn_k.weight: f16[4,8]", "weight %blk.0.attn_k.weight: f16[4,9]", "node %q (matmul_multi): weight 1: x f32[n,8] and weight f16[4,9]: inner dimensions differ"},
		{"undefined", "embedding(%token_embd.weight, %tokens)", "embedding(%token_embd.weight, %tokenz)", "node %x.0: %tokenz is not defined"},
		{"missing attr", "{eps=1e-05}", "", "node %t0 (rms_norm): missing attribute eps"},
		{"attr kind", "{eps=1e-05}", `{eps="big"}`, "node %t0 (rms_norm): attribute eps is string, want float"},
		{"unknown attr", "{eps=1e-05}", "{eps=1e-05, foo=1}", "node %t0 (rms_norm): unknown attribute foo"},
		{"arity", "embedding(%token_embd.weight, %tokens)", "embedding(%token_embd.weight)", "node %x.0 (embedding): 1 arguments, want 2"},
		{"twice", "input %pos: i32[n]", "input %tokens: i32[n]", "%tokens defined twice"},
		{"bad type", "input %pos: i32[n]", "input %pos: i33[n]", `unknown dtype "i33"`},
		{"no close", "\n}\n", "\n", "missing closing }"},
		{"garbage", "output %t", "output %t\n  what is this", "line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(base, c.from, c.to, 1)
			if text == base {
				t.Fatalf("replacement %q not found", c.from)
			}
			_, err := Parse(text)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestBuilderErrorNamesNode(t *testing.T) {
	b := NewBuilder("bad")
	x := b.Input("x", T(tensor.F32, Sym("n"), D(8)))
	w := b.Weight("w", T(tensor.F32, D(3)))
	b.NamedOp("h", "rms_norm", Attrs{"eps": Float(1e-6)}, x, w)
	_, err := b.Finish()
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Node != "%h" || ne.Op != "rms_norm" || !strings.Contains(err.Error(), "weight of 3 does not divide rows of 8") {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyCatchesUseBeforeDefinition(t *testing.T) {
	g := tinyBlock(t)
	g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0]
	err := Verify(g)
	if err == nil || !strings.Contains(err.Error(), "is not defined before this node") {
		t.Fatalf("err = %v", err)
	}
}

func TestTypeBytes(t *testing.T) {
	env := map[string]int{"n": 3}
	cases := []struct {
		t    Type
		want int64
	}{
		{T(tensor.F32, Sym("n"), D(8)), 96},
		{T(tensor.Q8_0, D(40), D(64)), 40 * 2 * 34},
		{T(tensor.F32), 4},
	}
	for _, c := range cases {
		if got, ok := c.t.Bytes(env); !ok || got != c.want {
			t.Errorf("%v: %d %v, want %d", c.t, got, ok, c.want)
		}
	}
	if _, ok := T(tensor.F32, Sym("m")).Bytes(env); ok {
		t.Error("unbound symbol gave a size")
	}
}

func TestClone(t *testing.T) {
	g := tinyBlock(t)
	c := g.Clone()
	if err := Verify(c); err != nil {
		t.Fatal(err)
	}
	if String(c) != String(g) {
		t.Fatal("clone prints differently")
	}
	c.Nodes[1].Attrs["eps"] = Float(0.5)
	c.Nodes[0].Outs[0].Name = "renamed"
	if strings.Contains(String(g), "renamed") || strings.Contains(String(g), "eps=0.5") {
		t.Fatal("editing the clone changed the original")
	}
}
