// This file is memory planning: with the graph's symbols bound (n rows, s logit rows), every
// node result gets an offset in one activation arena, and results whose lifetimes do not
// overlap share memory. Inputs and weights are not in the arena (the caller and the model
// file own them).
//
// A result is live from the node that computes it to the last node that reads it; graph
// outputs live to the end. Two results live at the same node never overlap in memory, so a
// node's results never share memory with its arguments, except through an in-place pair (see
// InPlace): result o of such an op takes over exactly the buffer of argument a when this node
// is a's last reader and the two are the same size. Buffers (a value with the values that
// took it over) are then placed greedily, largest first, each at the best-fitting gap among
// the already placed buffers whose lifetimes overlap its own (the smallest gap it fits; the
// end of the arena otherwise). Offsets and sizes are multiples of PlanAlign.
//
// CheckPlan verifies a plan independently of how it was made.
package graph

import (
	"fmt"
	"sort"
)

// PlanAlign is the alignment of every planned buffer, in bytes (a cache line).
const PlanAlign = 64

// inPlace lists, per op, the (result, argument) pairs that may share one buffer: the op's
// kernel must give the right answer when that result's memory is exactly that argument's.
// Element-wise ops qualify (each element is read before it is written); rms_norm and
// add_rms_norm work row by row, reading a whole row before writing it. For add_rms_norm the
// sum may take x's buffer and the normed rows y's.
var inPlace = map[string][][2]int{
	"add":          {{0, 0}, {0, 1}},
	"mul":          {{0, 0}, {0, 1}},
	"scale":        {{0, 0}},
	"silu":         {{0, 0}},
	"softcap":      {{0, 0}},
	"swiglu":       {{0, 0}, {0, 1}},
	"rms_norm":     {{0, 0}},
	"add_rms_norm": {{0, 0}, {1, 1}},
}

// InPlace reports whether result out of op may be written over argument arg's buffer. An
// executor running a plan must implement these ops so that this is safe.
func InPlace(op string, out, arg int) bool {
	for _, p := range inPlace[op] {
		if p[0] == out && p[1] == arg {
			return true
		}
	}
	return false
}

// MemPlan is an activation arena layout for one graph and one binding of its symbols.
type MemPlan struct {
	Env       map[string]int
	Offset    map[*Value]int64 // every node result's offset in the arena
	Size      map[*Value]int64 // its bytes (unaligned)
	Peak      int64            // the arena's size
	Unplanned int64            // the sum of all results' bytes: every result its own buffer
	Values    int              // results planned
	Aliased   int              // results written in place over an argument
	// LowerBound is the most bytes live at any one node (buffers as planned, in-place pairs
	// counted once): no placement of these buffers needs less than this.
	LowerBound int64
}

// lifetimes returns each node result's first and last node index (outputs: len(g.Nodes)).
func lifetimes(g *Graph) (def, last map[*Value]int) {
	def, last = map[*Value]int{}, map[*Value]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outs {
			def[o], last[o] = i, i
		}
		for _, a := range n.Args {
			if _, ok := def[a]; ok {
				last[a] = i
			}
		}
	}
	for _, o := range g.Outputs {
		if _, ok := def[o]; ok {
			last[o] = len(g.Nodes)
		}
	}
	return def, last
}

func alignUp(n int64) int64 { return (n + PlanAlign - 1) / PlanAlign * PlanAlign }

// buffer is one arena block and the values that use it in turn.
type buffer struct {
	size        int64 // aligned
	first, last int
	offset      int64
}

// PlanMemory lays out g's node results for the symbol values in env.
func PlanMemory(g *Graph, env map[string]int) (*MemPlan, error) {
	p := &MemPlan{Env: env, Offset: map[*Value]int64{}, Size: map[*Value]int64{}}
	def, last := lifetimes(g)
	bufOf := map[*Value]*buffer{}
	var bufs []*buffer
	for i, n := range g.Nodes {
		taken := map[*Value]bool{} // arguments already taken over by a result of this node
		for j, o := range n.Outs {
			size, ok := o.Type.Bytes(env)
			if !ok {
				return nil, &NodeError{Node: n.Name(), Op: n.Op, Err: fmt.Errorf("result %s: size of %v unknown with %v", o, o.Type, env)}
			}
			p.Size[o] = size
			p.Unplanned += size
			p.Values++
			var b *buffer
			for k, a := range n.Args {
				ab := bufOf[a]
				if ab != nil && !taken[a] && last[a] == i && p.Size[a] == size && InPlace(n.Op, j, k) {
					b = ab
					taken[a] = true
					p.Aliased++
					break
				}
			}
			if b == nil {
				b = &buffer{size: alignUp(size), first: def[o]}
				bufs = append(bufs, b)
			}
			b.last = last[o]
			bufOf[o] = b
		}
	}
	placeBuffers(bufs)
	for i := 0; i <= len(g.Nodes); i++ {
		var live int64
		for _, b := range bufs {
			if b.first <= i && i <= b.last {
				live += b.size
			}
		}
		p.LowerBound = max(p.LowerBound, live)
	}
	for v, b := range bufOf {
		p.Offset[v] = b.offset
		p.Peak = max(p.Peak, b.offset+b.size)
	}
	return p, nil
}

// placeBuffers gives each buffer an offset: largest first, each in the smallest gap between
// the placed buffers whose lifetimes overlap its own, or after the last of them.
func placeBuffers(bufs []*buffer) {
	order := append([]*buffer(nil), bufs...)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].size != order[j].size {
			return order[i].size > order[j].size
		}
		return order[i].first < order[j].first
	})
	var placed []*buffer
	for _, b := range order {
		var clash []*buffer
		for _, o := range placed {
			if o.first <= b.last && b.first <= o.last {
				clash = append(clash, o)
			}
		}
		sort.Slice(clash, func(i, j int) bool { return clash[i].offset < clash[j].offset })
		best, bestGap := int64(-1), int64(-1)
		at := int64(0) // the lowest free offset so far
		for _, o := range clash {
			if gap := o.offset - at; gap >= b.size && (bestGap < 0 || gap < bestGap) {
				best, bestGap = at, gap
			}
			at = max(at, o.offset+o.size)
		}
		if best < 0 {
			best = at
		}
		b.offset = best
		placed = append(placed, b)
	}
}

// CheckPlan verifies p against g: every node result has a place inside the arena, and no two
// results live at the same node overlap in memory, unless one is an in-place result written
// over the other (InPlace, this node their last reader) at the same offset and size.
func CheckPlan(g *Graph, p *MemPlan) error {
	def, last := lifetimes(g)
	var vals []*Value
	for _, n := range g.Nodes {
		for _, o := range n.Outs {
			size, ok := o.Type.Bytes(p.Env)
			if !ok {
				return fmt.Errorf("memplan: %s: size of %v unknown", o, o.Type)
			}
			off, planned := p.Offset[o]
			if !planned {
				return fmt.Errorf("memplan: %s has no offset", o)
			}
			if off < 0 || off%PlanAlign != 0 || off+size > p.Peak {
				return fmt.Errorf("memplan: %s at [%d,%d) is outside the arena of %d or misaligned", o, off, off+size, p.Peak)
			}
			vals = append(vals, o)
		}
	}
	size := func(v *Value) int64 { s, _ := v.Type.Bytes(p.Env); return s }
	for i, a := range vals {
		for _, b := range vals[i+1:] {
			if def[a] > last[b] || def[b] > last[a] {
				continue // not live together
			}
			sa, sb := size(a), size(b)
			oa, ob := p.Offset[a], p.Offset[b]
			if sa == 0 || sb == 0 || oa+sa <= ob || ob+sb <= oa {
				continue // disjoint
			}
			if inPlacePair(a, b, def, last) && oa == ob && sa == sb {
				continue
			}
			return fmt.Errorf("memplan: %s [%d,%d) and %s [%d,%d) are live together (nodes %d..%d and %d..%d) but overlap",
				a, oa, oa+sa, b, ob, ob+sb, def[a], last[a], def[b], last[b])
		}
	}
	return nil
}

// inPlacePair reports whether one of a, b is a result computed in place over the other: an
// argument of its node, read last by that node, the pair allowed by InPlace.
func inPlacePair(a, b *Value, def, last map[*Value]int) bool {
	for _, pr := range [][2]*Value{{a, b}, {b, a}} {
		arg, res := pr[0], pr[1]
		n := res.Def
		if n == nil || arg.Def == n || last[arg] != def[res] {
			continue
		}
		for k, x := range n.Args {
			if x == arg && InPlace(n.Op, res.Index, k) {
				return true
			}
		}
	}
	return false
}
