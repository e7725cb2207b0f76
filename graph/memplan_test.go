// Tests of memory planning: in-place chains share one buffer, the checker catches overlapping
// live values, and plans of random graphs (before and after the passes) always check.
package graph

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func TestPlanChainInPlace(t *testing.T) {
	// x -> matmul -> silu -> scale -> softcap -> matmul: the element-wise ops run in place over
	// the first matmul's buffer; the last matmul needs its own.
	g := mustParse(t, `graph chain {
  input %x: f32[n,8]
  weight %w: f32[8,8]
  %a: f32[n,8] = matmul(%x, %w)
  %b: f32[n,8] = silu(%a)
  %c: f32[n,8] = scale(%b) {by=0.5}
  %d: f32[n,8] = softcap(%c) {cap=30.0}
  %e: f32[n,8] = matmul(%d, %w)
  output %e
}
`)
	p, err := PlanMemory(g, map[string]int{"n": 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	const row = 16 * 8 * 4
	if p.Unplanned != 5*row || p.Peak != 2*row || p.Aliased != 3 || p.Values != 5 {
		t.Fatalf("peak %d, unplanned %d, aliased %d, values %d; want %d, %d, 3, 5", p.Peak, p.Unplanned, p.Aliased, p.Values, 2*row, 5*row)
	}
	if p.Offset[g.Value("a")] != p.Offset[g.Value("d")] || p.Offset[g.Value("d")] == p.Offset[g.Value("e")] {
		t.Fatalf("offsets %v", p.Offset)
	}
	// matmul is not in-place: its result never shares its argument's memory.
	if InPlace("matmul", 0, 0) || !InPlace("add_rms_norm", 1, 1) || InPlace("add_rms_norm", 1, 0) {
		t.Fatal("in-place table")
	}
}

func TestPlanUnboundSymbol(t *testing.T) {
	g := mustParse(t, residualBlock)
	_, err := PlanMemory(g, map[string]int{"m": 3})
	if err == nil || !strings.Contains(err.Error(), "node %o (matmul)") {
		t.Fatalf("err = %v", err)
	}
}

// CheckPlan rejects a plan where two values live at the same time overlap, and one where an
// in-place alias is not allowed (matmul over its argument).
func TestCheckPlanCatchesOverlap(t *testing.T) {
	g := mustParse(t, residualBlock)
	p, err := PlanMemory(g, map[string]int{"n": 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	// r1 is live from its add to the add of r2; d is computed in between.
	r1, d := g.Value("r1"), g.Value("d")
	bad := *p
	bad.Offset = map[*Value]int64{}
	for v, o := range p.Offset {
		bad.Offset[v] = o
	}
	bad.Offset[d] = bad.Offset[r1]
	if err := CheckPlan(g, &bad); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("overlap not caught: %v", err)
	}
	// h1 is read last by matmul d: sharing d's memory would be in place, which matmul is not.
	bad.Offset[d] = p.Offset[d]
	bad.Offset[g.Value("h1")] = bad.Offset[d]
	if err := CheckPlan(g, &bad); err == nil {
		t.Fatal("matmul in place not caught")
	}
	// A value outside the arena.
	bad.Offset[g.Value("h1")] = p.Peak
	if err := CheckPlan(g, &bad); err == nil || !strings.Contains(err.Error(), "outside the arena") {
		t.Fatalf("outside not caught: %v", err)
	}
}

// randomGraph builds a graph of random element-wise, norm, fused and matmul ops over rows of
// 8 or 16 (n rows) and gathered rows (s rows).
func randomGraph(t *testing.T, r *rand.Rand, nodes int) *Graph {
	t.Helper()
	b := NewBuilder("rand")
	n, s := Sym("n"), Sym("s")
	pool := map[string][]*Value{}
	add := func(vs ...*Value) {
		for _, v := range vs {
			pool[v.Type.String()] = append(pool[v.Type.String()], v)
		}
	}
	pick := func(ty Type) *Value {
		vs := pool[ty.String()]
		if len(vs) == 0 {
			return nil
		}
		// Prefer recent values, so chains form, but reach back too.
		if r.IntN(3) > 0 {
			return vs[len(vs)-1-r.IntN(min(len(vs), 3))]
		}
		return vs[r.IntN(len(vs))]
	}
	add(b.Input("x", T(tensor.F32, n, D(8))))
	rows := b.Input("rows", T(tensor.I32, s))
	w := map[[2]int]*Value{}
	for _, io := range [][2]int{{8, 8}, {16, 16}, {16, 8}, {8, 16}} {
		w[io] = b.Weight(fmt.Sprintf("w%dx%d", io[0], io[1]), T(tensor.F32, D(io[0]), D(io[1])))
	}
	norm := map[int]*Value{8: b.Weight("norm8", T(tensor.F32, D(8))), 16: b.Weight("norm16", T(tensor.F32, D(16)))}
	var last []*Value
	for len(b.g.Nodes) < nodes {
		d := []int{8, 16}[r.IntN(2)]
		rowSym := n
		if r.IntN(4) == 0 {
			rowSym = s
		}
		ty := T(tensor.F32, rowSym, D(d))
		x := pick(ty)
		if x == nil {
			if rowSym == s {
				if src := pick(T(tensor.F32, n, D(d))); src != nil {
					last = []*Value{b.Op("gather_rows", nil, src, rows)}
					add(last...)
				}
				continue
			}
			if src := pick(T(tensor.F32, n, D(24-d))); src != nil {
				last = []*Value{b.Op("matmul", nil, src, w[[2]int{d, 24 - d}])}
				add(last...)
			}
			continue
		}
		y := pick(ty)
		switch r.IntN(9) {
		case 0:
			last = []*Value{b.Op("add", nil, x, y)}
		case 1:
			last = []*Value{b.Op("mul", nil, x, y)}
		case 2:
			last = []*Value{b.Op("silu", nil, x)}
		case 3:
			last = []*Value{b.Op("scale", Attrs{"by": Float(0.5)}, x)}
		case 4:
			last = []*Value{b.Op("rms_norm", Attrs{"eps": Float(1e-5)}, x, norm[d])}
		case 5:
			last = b.OpN("add_rms_norm", Attrs{"eps": Float(1e-5)}, []*Value{x, y, norm[d]})
		case 6:
			last = []*Value{b.Op("swiglu", nil, x, y)}
		case 7:
			last = []*Value{b.Op("softmax", nil, x)}
		case 8:
			last = []*Value{b.Op("matmul", nil, x, w[[2]int{d, d}])}
		}
		add(last...)
	}
	outs := []*Value{last[0]}
	for range r.IntN(3) {
		nd := b.g.Nodes[r.IntN(len(b.g.Nodes))]
		outs = append(outs, nd.Outs[r.IntN(len(nd.Outs))])
	}
	b.Output(outs...)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Plans of random graphs, as built and after DCE and the add + norm fusion, always pass the
// checker, never exceed the unplanned sum (aligned), and are never worse than one buffer per
// value.
func TestPlanRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	aliased := 0
	for i := range 300 {
		g := randomGraph(t, r, 5+r.IntN(40))
		opt, _, err := RunPasses(g, DCE, FuseAddNorm)
		if err != nil {
			t.Fatalf("graph %d: %v\n%s", i, err, String(g))
		}
		env := map[string]int{"n": 1 + r.IntN(9), "s": 1 + r.IntN(3)}
		for _, h := range []*Graph{g, opt} {
			p, err := PlanMemory(h, env)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckPlan(h, p); err != nil {
				t.Fatalf("graph %d %v: %v\n%s", i, env, err, String(h))
			}
			var alignedSum int64
			for _, sz := range p.Size {
				alignedSum += alignUp(sz)
			}
			if p.Peak > alignedSum || p.Peak < p.LowerBound {
				t.Fatalf("graph %d: peak %d above one buffer per value %d or below the live bound %d", i, p.Peak, alignedSum, p.LowerBound)
			}
			aliased += p.Aliased
		}
	}
	if aliased == 0 {
		t.Fatal("no value was ever planned in place")
	}
}
