package exec_test

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestRopeFreqScale checks rope's freq_scale (linear RoPE scaling, Gemma 3's global layers),
// in both pairings, in the executor and the float64 reference against the formula: pair i of
// a head at position p turns by freq_scale * p * theta^(-2i/head_dim).
func TestRopeFreqScale(t *testing.T) {
	const V, heads, hd, theta, fs = 9, 2, 8, 100.0, 0.25
	for _, neox := range []int64{0, 1} {
		n := graph.Sym("n")
		b := graph.NewBuilder("rope")
		tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
		pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
		rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
		e := b.Weight("e", graph.T(tensor.F32, graph.D(V), graph.D(heads*hd)))
		x := b.Op("embedding", nil, e, tok)
		y := b.Op("rope", graph.Attrs{"heads": graph.Int(heads), "head_dim": graph.Int(hd), "theta": graph.Float(theta),
			"neox": graph.Int(neox), "freq_scale": graph.Float(fs)}, x, pos)
		b.Output(b.Op("gather_rows", nil, y, rows))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		ev := func(i int) float32 { return float32(i%13)*0.3 - 1.7 }
		et := f32T("e", []int{V, heads * hd}, ev)
		p, err := exec.Compile(g, map[string]*tensor.Tensor{"e": et}, exec.Options{Pool: kernels.Serial})
		if err != nil {
			t.Fatal(err)
		}
		toks, ps := []int{3, 1, 6, 0, 8}, []int{0, 1, 7, 30, 1000}
		st := &exec.Step{Tokens: toks, LogitRows: []int{0, 1, 2, 3, 4}, KV: exec.KV{BlockSize: 1}}
		for _, q := range ps {
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: q})
		}
		got, err := p.Run(st)
		if err != nil {
			t.Fatal(err)
		}
		ew, err := ref.FromTensor(et)
		if err != nil {
			t.Fatal(err)
		}
		t32, p32, r32 := make([]int32, len(toks)), make([]int32, len(toks)), make([]int32, len(toks))
		for i := range toks {
			t32[i], p32[i], r32[i] = int32(toks[i]), int32(ps[i]), int32(i)
		}
		out, err := ref.Run(g, map[string]*ref.Tensor{"e": ew, exec.InputTokens: ref.Ints([]int{len(toks)}, t32),
			exec.InputPositions: ref.Ints([]int{len(toks)}, p32), exec.InputLogitRows: ref.Ints([]int{len(toks)}, r32)})
		if err != nil {
			t.Fatal(err)
		}
		for r, tk := range toks {
			for h := 0; h < heads; h++ {
				for i := 0; i < hd/2; i++ {
					a, c := h*hd+2*i, h*hd+2*i+1
					if neox == 1 {
						a, c = h*hd+i, h*hd+i+hd/2
					}
					ang := fs * float64(ps[r]) * math.Pow(theta, -2*float64(i)/hd)
					x0, x1 := float64(ev(tk*heads*hd+a)), float64(ev(tk*heads*hd+c))
					w0, w1 := x0*math.Cos(ang)-x1*math.Sin(ang), x0*math.Sin(ang)+x1*math.Cos(ang)
					// float32 angles at position 1000: a few 1e-5 of turn
					for _, v := range []struct {
						name      string
						got, want float64
					}{{"exec", float64(got[r*heads*hd+a]), w0}, {"exec", float64(got[r*heads*hd+c]), w1},
						{"ref", out[0].F[r*heads*hd+a], w0}, {"ref", out[0].F[r*heads*hd+c], w1}} {
						if math.Abs(v.got-v.want) > 2e-4 {
							t.Fatalf("neox %d row %d head %d pair %d: %s %v, want %v", neox, r, h, i, v.name, v.got, v.want)
						}
					}
				}
			}
		}
	}
}

// TestRopeFreqScaleFusesAndChecks: fuse_qkv_rope carries freq_scale into qkv_rope (and keeps
// q and k apart when they differ); the type rule refuses a non-positive one.
func TestRopeFreqScaleFusesAndChecks(t *testing.T) {
	build := func(qs, ks float64) *graph.Graph {
		n := graph.Sym("n")
		b := graph.NewBuilder("att")
		tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
		pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
		e := b.Weight("e", graph.T(tensor.F32, graph.D(5), graph.D(8)))
		x := b.Op("embedding", nil, e, tok)
		ra := func(s float64) graph.Attrs {
			return graph.Attrs{"heads": graph.Int(1), "head_dim": graph.Int(8), "theta": graph.Float(100), "freq_scale": graph.Float(s)}
		}
		q := b.Op("rope", ra(qs), b.Op("scale", graph.Attrs{"by": graph.Float(2)}, x), pos)
		k := b.Op("rope", ra(ks), b.Op("scale", graph.Attrs{"by": graph.Float(3)}, x), pos)
		b.Output(b.Op("attention", graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(1), "kv_heads": graph.Int(1),
			"head_dim": graph.Int(8)}, q, k, x))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	f, _, err := graph.FuseQKVRope.Run(build(0.5, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range f.Nodes {
		if n.Op == "qkv_rope" {
			found = true
			if s := n.Attrs.Float("freq_scale", 1); s != 0.5 {
				t.Fatalf("qkv_rope freq_scale %v, want 0.5", s)
			}
		}
	}
	if !found {
		t.Fatal("no qkv_rope")
	}
	f, _, err = graph.FuseQKVRope.Run(build(0.5, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Nodes {
		if n.Op == "qkv_rope" {
			t.Fatal("q and k of different freq_scale fused")
		}
	}
	n := graph.Sym("n")
	b := graph.NewBuilder("bad")
	b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	x := b.Weight("x", graph.T(tensor.F32, graph.D(3), graph.D(8)))
	_ = pos
	xs := b.Op("gather_rows", nil, x, b.Input("idx", graph.T(tensor.I32, n)))
	b.Op("rope", graph.Attrs{"heads": graph.Int(1), "head_dim": graph.Int(8), "theta": graph.Float(100), "freq_scale": graph.Float(-1)}, xs, pos)
	if _, err := b.Finish(); err == nil {
		t.Fatal("freq_scale -1 accepted")
	}
}
