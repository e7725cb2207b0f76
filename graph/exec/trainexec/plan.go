// This file plans the value buffers: every f32 result (with the results written in place of
// an argument, p.alias) lives from the first instruction writing it to the last reading it,
// and buffers of the same size are reused by values whose lifetimes do not overlap. Forward
// values read by the backward live until then, so the plan keeps exactly what the backward
// needs; the backward's temporaries share a few buffers, as train/nn's scratch did. The
// logits and the loss stay until the next Forward.
package trainexec

import (
	"slices"

	"github.com/llmcloud/llmcloud/graph"
)

// valueTouches lists the values n's instruction reads and writes.
func valueTouches(n *graph.Node, f *fusion) (reads, writes []*graph.Value) {
	if sw, ok := f.swBwd[n]; ok {
		return []*graph.Value{sw.dy, sw.g, sw.u}, []*graph.Value{sw.dg, sw.du}
	}
	if ls, ok := f.dxSum[n]; ok {
		for _, l := range ls {
			reads = append(reads, l.Args...)
		}
		return reads, n.Outs
	}
	if gv, ok := f.swFwd[n]; ok {
		return gv[:], n.Outs
	}
	for _, o := range n.Outs {
		if f.sink[o] == nil {
			writes = append(writes, o)
		}
	}
	if na, ok := f.normAdd[n]; ok {
		writes[0] = na.add.Outs[0]
		return append(append([]*graph.Value{}, n.Args...), na.other), writes
	}
	return n.Args, writes
}

// plan gives every planned value its buffer.
func (p *Program) plan(f *fusion) {
	root := func(v *graph.Value) *graph.Value {
		for p.alias[v] != nil {
			v = p.alias[v]
		}
		return v
	}
	start, end := map[*graph.Value]int{}, map[*graph.Value]int{}
	var order []*graph.Value
	note := func(v *graph.Value, i int) {
		if v.Kind != graph.KindResult || p.bufs[v] != nil {
			return // inputs, weights, and results bound to a kept buffer (probabilities)
		}
		r := root(v)
		if p.bufs[r] != nil {
			return
		}
		if _, ok := start[r]; !ok {
			start[r] = i
			order = append(order, r)
		}
		end[r] = max(end[r], i)
	}
	total := len(p.code)
	for i := range p.code {
		for _, v := range p.vwrites[i] {
			note(v, i)
		}
		for _, v := range p.vreads[i] {
			note(v, i)
		}
	}
	sides := p.sideValues()
	for _, n := range p.g.Nodes { // in order: the plan is the same every time
		if v := sides[n]; v != nil {
			note(v, p.sideAt[n])
			note(v, max(p.sideAt[n], p.sideEnd[n]))
		}
	}
	for _, v := range []*graph.Value{p.logits, p.g.Outputs[0], p.stage.out, p.stage.din} {
		if v == nil {
			continue
		}
		if _, ok := start[root(v)]; ok {
			end[root(v)] = total
		}
	}
	slices.SortStableFunc(order, func(a, b *graph.Value) int { return start[a] - start[b] })
	type held struct {
		buf   []float32
		end   int
		share bool
	}
	var live []held
	free := map[int][][]float32{}
	freeShared := map[int][][]float32{} // buffers of the arena (slots.go)
	taken := map[int]int{}
	size := func(v *graph.Value) int {
		n := p.inner[v]
		if p.sym[v] {
			n *= p.maxB * p.maxT
		}
		return n
	}
	for _, r := range order {
		s := start[r]
		keep := live[:0]
		for _, h := range live {
			if h.end < s {
				if h.share {
					freeShared[len(h.buf)] = append(freeShared[len(h.buf)], h.buf)
				} else {
					free[len(h.buf)] = append(free[len(h.buf)], h.buf)
				}
			} else {
				keep = append(keep, h)
			}
		}
		live = keep
		n := size(r)
		var b []float32
		share := p.arena != nil && p.transient(s, end[r], total)
		switch {
		case share && len(freeShared[n]) > 0:
			fs := freeShared[n]
			b, freeShared[n] = fs[len(fs)-1], fs[:len(fs)-1]
		case share:
			b = p.arena.take(n, taken[n])
			taken[n]++
			p.shared += int64(n) * 4
		case len(free[n]) > 0:
			b, free[n] = free[n][len(free[n])-1], free[n][:len(free[n])-1]
		default:
			b = make([]float32, n)
			p.planned += int64(n) * 4
		}
		p.bufs[r] = b
		live = append(live, held{b, end[r], share})
	}
	for v := range p.alias {
		if b := p.bufs[root(v)]; b != nil {
			p.bufs[v] = b
		}
	}
	for n, v := range sides {
		p.side[n] = p.bufs[v]
		delete(p.bufs, v)
	}
}
