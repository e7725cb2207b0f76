// This file is the fuse_qkv_rope pass: between a block's q/k/v projections and its attention
// sit per-row ops (Qwen2's biases, Qwen3's per-head q/k norms, RoPE of q and k); they become
// one qkv_rope node, which the executor runs as one pass over the rows (each row's q, k, v
// still see the same float operations in the same order: biases, norms, rotation).
package graph

import "strconv"

// FuseQKVRope fuses the per-row work feeding each attention node.
var FuseQKVRope = Pass{
	Name: "fuse_qkv_rope",
	Doc:  "[add bias] -> [rms_norm per head] -> rope of q and k (and v's bias) -> qkv_rope",
	Run:  fuseQKVRope,
}

func fuseQKVRope(in *Graph) (*Graph, Stats, error) {
	g := in.Clone()
	users := g.Users()
	names := map[string]bool{}
	for _, v := range g.Inputs {
		names[v.Name] = true
	}
	for _, v := range g.Weights {
		names[v.Name] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outs {
			names[o.Name] = true
		}
	}
	// sole returns v's defining node when it is op and v's only user is the next op.
	sole := func(v *Value, op string) *Node {
		if v.Kind != KindResult || v.Def.Op != op || len(users[v]) != 1 || g.IsOutput(v) {
			return nil
		}
		return v.Def
	}
	vecWeight := func(v *Value) bool { return v.Kind == KindWeight && len(v.Type.Shape) == 1 }
	dead := map[*Node]bool{}
	before := map[*Node]*Node{} // attention -> the qkv_rope to insert before it
	st := Stats{}
	for _, att := range g.Nodes {
		if att.Op != "attention" {
			continue
		}
		qr, kr := sole(att.Args[0], "rope"), sole(att.Args[1], "rope")
		if qr == nil || kr == nil || len(qr.Args) != len(kr.Args) || qr.Args[1] != kr.Args[1] ||
			(len(qr.Args) == 3 && qr.Args[2] != kr.Args[2]) ||
			qr.Attrs.Int("head_dim", 0) != att.Attrs.Int("head_dim", -1) || kr.Attrs.Int("head_dim", 0) != att.Attrs.Int("head_dim", -1) ||
			qr.Attrs.Int("heads", 0) != att.Attrs.Int("heads", -1) || kr.Attrs.Int("heads", 0) != att.Attrs.Int("kv_heads", -1) ||
			qr.Attrs.Float("theta", 0) != kr.Attrs.Float("theta", 1) || qr.Attrs.Int("neox", 0) != kr.Attrs.Int("neox", 0) ||
			qr.Attrs.Float("mscale", 1) != kr.Attrs.Float("mscale", 1) || qr.Attrs.Float("freq_scale", 1) != kr.Attrs.Float("freq_scale", 1) ||
			!sameYarn(qr.Attrs, kr.Attrs) {
			continue
		}
		q, k, v := qr.Args[0], kr.Args[0], att.Args[2]
		var chain []*Node
		attrs := Attrs{"heads": att.Attrs["heads"], "kv_heads": att.Attrs["kv_heads"], "head_dim": att.Attrs["head_dim"],
			"theta": qr.Attrs["theta"]}
		if qr.Attrs.Int("neox", 0) != 0 {
			attrs["neox"] = Int(1)
		}
		if m, ok := qr.Attrs["mscale"]; ok {
			attrs["mscale"] = m
		}
		if fs, ok := qr.Attrs["freq_scale"]; ok {
			attrs["freq_scale"] = fs
		}
		CopyYarn(attrs, qr.Attrs)
		var norms []*Value
		qn, kn := sole(q, "rms_norm"), sole(k, "rms_norm")
		if qn != nil && kn != nil && vecWeight(qn.Args[1]) && vecWeight(kn.Args[1]) &&
			qn.Attrs.Float("eps", 0) == kn.Attrs.Float("eps", 1) {
			chain = append(chain, qn, kn)
			norms = []*Value{qn.Args[1], kn.Args[1]}
			attrs["qk_norm"], attrs["eps"] = Int(1), qn.Attrs["eps"]
			q, k = qn.Args[0], kn.Args[0]
		}
		var biases []*Value
		bq, bk, bv := sole(q, "add"), sole(k, "add"), sole(v, "add")
		if bq != nil && bk != nil && bv != nil && vecWeight(bq.Args[1]) && vecWeight(bk.Args[1]) && vecWeight(bv.Args[1]) {
			chain = append(chain, bq, bk, bv)
			biases = []*Value{bq.Args[1], bk.Args[1], bv.Args[1]}
			attrs["bias"] = Int(1)
			q, k, v = bq.Args[0], bk.Args[0], bv.Args[0]
		}
		args := append([]*Value{q, k, v, qr.Args[1]}, biases...)
		args = append(args, norms...)
		if len(qr.Args) == 3 {
			args = append(args, qr.Args[2])
		}
		f := &Node{Op: "qkv_rope", Args: args, Attrs: attrs}
		vOut := att.Args[2]
		if biases == nil { // v passes through: a new value
			name := vOut.Name + ".r"
			for i := 0; names[name]; i++ {
				name = vOut.Name + ".r" + strconv.Itoa(i)
			}
			names[name] = true
			vOut = &Value{Name: name, Type: vOut.Type, Kind: KindResult}
			att.Args[2] = vOut
		}
		for i, o := range []*Value{att.Args[0], att.Args[1], vOut} {
			o.Def, o.Index = f, i
			f.Outs = append(f.Outs, o)
		}
		dead[qr], dead[kr] = true, true
		for _, c := range chain {
			dead[c] = true
		}
		before[att] = f
		st["fused qkv_rope"]++
		st["ops absorbed"] += int64(2 + len(chain))
	}
	nodes := make([]*Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		if f := before[n]; f != nil {
			nodes = append(nodes, f)
		}
		if !dead[n] {
			nodes = append(nodes, n)
		}
	}
	g.Nodes = nodes
	return g, st, nil
}

// sameYarn reports whether a and b have the same YaRN attributes.
func sameYarn(a, b Attrs) bool {
	for _, s := range YarnAttrs {
		va, oka := a[s.Name]
		vb, okb := b[s.Name]
		if oka != okb || (oka && va.String() != vb.String()) {
			return false
		}
	}
	return true
}
