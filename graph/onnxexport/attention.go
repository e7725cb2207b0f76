// This file exports rope and attention. Positions are 0..seq-1 (Range over input_ids' second
// dimension). RoPE uses precomputed tables for positions 0..MaxPositions-1, made by the same
// code as llmcloud's kernel (kernels.Rope.Table, Llama 3 frequency factors folded in), in a
// form that covers both layouts: out = x*cos + x[perm]*sin, where perm swaps each rotated
// pair (adjacent pairs, or halves for neox) and sin carries the sign. Attention is
// Reshape/Transpose, q·kᵀ scaled by 1/sqrt(head_dim), a causal mask (Where), Softmax and
// ·v, with grouped-query heads repeated by Expand.
package onnxexport

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// positions is the positions of the call's tokens, int64 [seq]: 0..seq-1, or after the
// cached ones with a KV cache (cachePositions).
func (e *exporter) positions() string {
	if e.pos == "" {
		shape := e.add("Shape", []string{InputIDs}, []string{"positions/shape"})[0]
		seq := e.add("Gather", []string{shape, e.ints(true, 1)}, []string{"positions/seq"}, onnx.IntAttr("axis", 0))[0]
		if e.opt.KVCache {
			e.cachePositions(seq)
		} else {
			e.pos = e.add("Range", []string{e.ints(true, 0), seq, e.ints(true, 1)}, []string{"positions"})[0]
			e.keyPos = e.pos
		}
	}
	return e.pos
}

// mask is bool [seq, keys], true where the key at position j is hidden from the query at
// position i: j > i, or j <= i-window.
func (e *exporter) mask(window int64) string {
	if m, ok := e.masks[window]; ok {
		return m
	}
	pos := e.positions()
	q := e.add("Unsqueeze", []string{pos, e.ints(false, 1)}, []string{fmt.Sprintf("mask%d/q", window)})[0]
	k := e.add("Unsqueeze", []string{e.keyPos, e.ints(false, 0)}, []string{fmt.Sprintf("mask%d/k", window)})[0]
	m := e.add("Greater", []string{k, q}, []string{fmt.Sprintf("mask%d/future", window)})[0]
	if window > 0 {
		first := e.add("Sub", []string{q, e.ints(true, window)}, []string{fmt.Sprintf("mask%d/first", window)})[0]
		old := e.add("LessOrEqual", []string{k, first}, []string{fmt.Sprintf("mask%d/old", window)})[0]
		m = e.add("Or", []string{m, old}, []string{fmt.Sprintf("mask%d/hidden", window)})[0]
	}
	e.masks[window] = m
	return m
}

// ropeTables returns the cos and signed-sin tables [MaxPositions, 1, hd] and the pair
// permutation [hd] for one rope configuration.
func (e *exporter) ropeTables(hd int, theta float64, neox bool, freqs *graph.Value) (cos, sin, perm string, err error) {
	key := fmt.Sprintf("rope_hd%d_theta%g_neox%v", hd, theta, neox)
	var factors []float32
	if freqs != nil {
		key += "_" + freqs.Name
		if factors, _, err = e.w(freqs.Name); err != nil {
			return "", "", "", fmt.Errorf("rope frequency factors %s: %w", freqs.Name, err)
		}
	}
	half := hd / 2
	p := make([]int64, hd)
	for i := 0; i < half; i++ {
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+half
		}
		p[a], p[b] = int64(b), int64(a)
	}
	perm = e.ints(false, p...)
	if t, ok := e.ropes[key]; ok {
		return t[0], t[1], perm, nil
	}
	r, err := kernels.NewRope(hd, theta, neox, factors)
	if err != nil {
		return "", "", "", err
	}
	n := e.opt.MaxPositions
	cs := make([]float32, hd)
	cv, sv := make([]float32, n*hd), make([]float32, n*hd)
	for pos := 0; pos < n; pos++ {
		r.Table(cs, pos)
		row := pos * hd
		for i := 0; i < half; i++ {
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			c, s := cs[2*i], cs[2*i+1]
			cv[row+a], cv[row+b] = c, c
			sv[row+a], sv[row+b] = -s, s
		}
	}
	dims := []int64{int64(n), 1, int64(hd)}
	cos = e.init(onnx.FloatTensor(key+"/cos", dims, cv))
	sin = e.init(onnx.FloatTensor(key+"/sin", dims, sv))
	e.ropes[key] = [2]string{cos, sin}
	return cos, sin, perm, nil
}

func (e *exporter) rope(n *graph.Node) error {
	if n.Args[1].Kind != graph.KindInput || n.Args[1].Name != graphPositions {
		return fmt.Errorf("positions %%%s: only rope at the graph input %%%s exports", n.Args[1].Name, graphPositions)
	}
	x, err := e.value(n.Args[0])
	if err != nil {
		return err
	}
	heads, hd := n.Attrs.Int("heads", 0), n.Attrs.Int("head_dim", 0)
	if m := n.Attrs.Float("mscale", 1); m != 1 {
		return fmt.Errorf("rope with mscale %g (LongRoPE's attention factor) has no ONNX mapping yet", m)
	}
	if s := n.Attrs.Float("freq_scale", 1); s != 1 {
		return fmt.Errorf("rope with freq_scale %g (linear RoPE scaling) has no ONNX mapping yet", s)
	}
	var freqs *graph.Value
	if len(n.Args) == 3 {
		freqs = n.Args[2]
	}
	cos, sin, perm, err := e.ropeTables(int(hd), n.Attrs.Float("theta", 0), n.Attrs.Int("neox", 0) != 0, freqs)
	if err != nil {
		return err
	}
	pos := e.positions()
	c := e.op1("Gather", []string{cos, pos}, onnx.IntAttr("axis", 0)) // [seq, 1, hd]
	s := e.op1("Gather", []string{sin, pos}, onnx.IntAttr("axis", 0))
	x4 := e.op1("Reshape", []string{x, e.ints(false, 0, 0, heads, hd)})
	swapped := e.op1("Gather", []string{x4, perm}, onnx.IntAttr("axis", 3))
	sum := e.op1("Add", []string{e.op1("Mul", []string{x4, c}), e.op1("Mul", []string{swapped, s})})
	e.result(n.Outs[0], "Reshape", []string{sum, e.ints(false, 0, 0, heads*hd)})
	return nil
}

func (e *exporter) attention(n *graph.Node) error {
	args, err := e.values(n.Args)
	if err != nil {
		return err
	}
	heads, kvh, hd := n.Attrs.Int("heads", 0), n.Attrs.Int("kv_heads", 0), n.Attrs.Int("head_dim", 0)
	group := heads / kvh
	// heads split out and moved before the sequence: q [B,H,S,hd], kᵀ [B,KV,hd,S], v [B,KV,S,hd]
	split := func(x string, h int64, perm ...int64) string {
		return e.op1("Transpose", []string{e.op1("Reshape", []string{x, e.ints(false, 0, 0, h, hd)})},
			onnx.IntsAttr("perm", perm...))
	}
	q := split(args[0], heads, 0, 2, 1, 3)
	var kt, v string
	if e.opt.KVCache {
		kt, v = e.cachedKV(n, args[1], args[2])
	} else {
		kt, v = split(args[1], kvh, 0, 2, 3, 1), split(args[2], kvh, 0, 2, 1, 3)
	}
	if group > 1 { // each KV head serves `group` consecutive query heads
		repeat := func(x string, last2 ...int64) string {
			u := e.op1("Unsqueeze", []string{x, e.ints(false, 2)})
			x5 := e.op1("Expand", []string{u, e.ints(false, 1, 1, group, 1, 1)})
			return e.op1("Reshape", []string{x5, e.ints(false, 0, heads, last2[0], last2[1])})
		}
		kt, v = repeat(kt, hd, -1), repeat(v, -1, hd)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	scores := e.op1("Mul", []string{e.op1("MatMul", []string{q, kt}), e.float(scale)}) // [B,H,S,S]
	if c := float32(n.Attrs.Float("softcap", 0)); c > 0 {
		scores = e.softcap(scores, c, e.fresh("softcap"))
	}
	masked := e.op1("Where", []string{e.mask(n.Attrs.Int("window", 0)), e.float(float32(math.Inf(-1))), scores})
	probs := e.op1("Softmax", []string{masked}, onnx.IntAttr("axis", -1))
	ctx := e.op1("Transpose", []string{e.op1("MatMul", []string{probs, v})}, onnx.IntsAttr("perm", 0, 2, 1, 3))
	e.result(n.Outs[0], "Reshape", []string{ctx, e.ints(false, 0, 0, heads*hd)})
	return nil
}
