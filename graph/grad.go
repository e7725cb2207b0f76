// This file is reverse-mode differentiation over the graph: Grad appends to a copy of a
// forward graph the nodes computing d loss / d w for chosen values w, walking the nodes
// backwards and applying each op's backward rule (gradRules, registered next to each op family
// in grad_*.go). A value used several times gets the sum (add) of its users' contributions.
//
// Only values that depend on some w get gradients, and a rule is asked only for the arguments
// that need one. Integer values (token ids, positions, targets, row indices) and rope's
// frequency divisors are constants. The result is an ordinary graph: it verifies, prints and
// parses like any other, and the compiler's passes apply to it.
package graph

import (
	"fmt"
	"strconv"

	"github.com/llmcloud/llmcloud/tensor"
)

// gradRule is an op's backward rule: given node n (its arguments and results are the forward
// graph's) and the gradients dys of its results (nil: that result gets none), it returns one
// gradient per argument, computed only where need[i] (nil elsewhere). It writes nodes with gb.
type gradRule func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value

var gradRules = map[string]gradRule{}

// HasGrad reports whether op has a backward rule.
func HasGrad(op string) bool { return gradRules[op] != nil }

// Grad returns a graph whose outputs are loss (a scalar f32[] of g) followed by d loss / d w for
// each w of wrt (inputs or weights of g, F32 gradients of their shapes). g is not modified:
// the result starts with a copy of g's nodes.
func Grad(g *Graph, loss *Value, wrt []*Value) (*Graph, error) {
	if loss == nil || !loss.Type.Equal(T(tensor.F32)) {
		return nil, fmt.Errorf("graph: grad: the loss must be a scalar f32[], is %v", loss)
	}
	return grad(g, loss, "", wrt)
}

// grad is Grad, starting from the gradient 1 of loss (seed ""), or from a new input called
// seed holding the gradient of loss (GradFrom).
func grad(g *Graph, loss *Value, seed string, wrt []*Value) (*Graph, error) {
	if err := Verify(g); err != nil {
		return nil, err
	}
	cg := g.Clone()
	lossC := cg.Value(loss.Name)
	var wrtC []*Value
	for _, w := range wrt {
		if w == nil {
			return nil, fmt.Errorf("graph: grad: nil value to differentiate by")
		}
		c := cg.Value(w.Name)
		if c == nil || c.Kind == KindResult || c.Type.DType == tensor.I32 {
			return nil, fmt.Errorf("graph: grad: %v is not a float input or weight of the graph", w)
		}
		wrtC = append(wrtC, c)
	}
	if lossC == nil {
		return nil, fmt.Errorf("graph: grad: loss %v is not in the graph", loss)
	}
	var seedIn *Value
	if seed != "" {
		if cg.Value(seed) != nil {
			return nil, fmt.Errorf("graph: grad: seed %%%s already defined", seed)
		}
		seedIn = &Value{Name: seed, Type: lossC.Type, Kind: KindInput}
		seedIn.Type.Shape = append(Shape(nil), lossC.Type.Shape...)
		cg.Inputs = append(cg.Inputs, seedIn)
	}
	gb := newGradBuilder(cg)
	// needs: values that depend on some w.
	needs := map[*Value]bool{}
	for _, w := range wrtC {
		needs[w] = true
	}
	for _, n := range cg.Nodes {
		dep := false
		for _, a := range n.Args {
			dep = dep || needs[a]
		}
		for _, o := range n.Outs {
			needs[o] = dep && o.Type.DType == tensor.F32
		}
	}
	contrib := map[*Value][]*Value{}
	if seedIn != nil {
		contrib[lossC] = []*Value{seedIn}
	} else {
		contrib[lossC] = []*Value{gb.op1("constant", Attrs{"value": Float(1)})}
	}
	forward := cg.Nodes
	for i := len(forward) - 1; i >= 0; i-- {
		n := forward[i]
		dys := make([]*Value, len(n.Outs))
		hasDy := false
		for j, o := range n.Outs {
			if len(contrib[o]) > 0 && needs[o] {
				dys[j] = gb.sum(contrib[o])
				hasDy = true
			}
		}
		need := make([]bool, len(n.Args))
		anyNeed := false
		for j, a := range n.Args {
			need[j] = needs[a] && a.Type.DType != tensor.I32
			anyNeed = anyNeed || need[j]
		}
		if !hasDy || !anyNeed {
			continue
		}
		rule := gradRules[n.Op]
		if rule == nil {
			return nil, &NodeError{Node: n.Name(), Op: n.Op, Err: fmt.Errorf("no backward rule")}
		}
		das := rule(gb, n, dys, need)
		if gb.err != nil {
			return nil, &NodeError{Node: n.Name(), Op: n.Op, Err: fmt.Errorf("backward: %w", gb.err)}
		}
		for j, da := range das {
			if da != nil && need[j] {
				contrib[n.Args[j]] = append(contrib[n.Args[j]], da)
			}
		}
	}
	cg.Outputs = []*Value{lossC}
	for _, w := range wrtC {
		var d *Value
		if len(contrib[w]) == 0 {
			d = gb.op1("zeros", nil, w)
		} else {
			d = gb.sum(contrib[w])
		}
		cg.Outputs = append(cg.Outputs, d)
	}
	if gb.err != nil {
		return nil, gb.err
	}
	gb.nameGrads(cg.Outputs[1:], wrtC)
	if err := Verify(cg); err != nil {
		return nil, fmt.Errorf("graph: grad: %w", err)
	}
	return cg, nil
}

// gradBuilder appends backward nodes to a graph, naming results d0, d1, ... (skipping names
// the forward graph uses) and keeping the first error.
type gradBuilder struct {
	g     *Graph
	names map[string]bool
	seq   int
	err   error
	mine  map[*Value]bool // values written by the backward pass
}

func newGradBuilder(g *Graph) *gradBuilder {
	gb := &gradBuilder{g: g, names: map[string]bool{}, mine: map[*Value]bool{}}
	for _, v := range g.Inputs {
		gb.names[v.Name] = true
	}
	for _, v := range g.Weights {
		gb.names[v.Name] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outs {
			gb.names[o.Name] = true
		}
	}
	return gb
}

func (gb *gradBuilder) fresh() string {
	for {
		name := "d" + strconv.Itoa(gb.seq)
		gb.seq++
		if !gb.names[name] {
			gb.names[name] = true
			return name
		}
	}
}

// op appends a node and returns its results (placeholders after an error).
func (gb *gradBuilder) op(op string, attrs Attrs, args ...*Value) []*Value {
	types, err := Infer(op, argTypes(args), attrs)
	if err != nil {
		if gb.err == nil {
			gb.err = err
		}
		types = []Type{{}, {}, {}}
	}
	n := &Node{Op: op, Args: args, Attrs: attrs}
	for i, t := range types {
		v := &Value{Name: gb.fresh(), Type: t, Kind: KindResult, Def: n, Index: i}
		n.Outs = append(n.Outs, v)
		gb.mine[v] = true
	}
	if err == nil {
		gb.g.Nodes = append(gb.g.Nodes, n)
	}
	return n.Outs
}

// op1 is op for a single-result op.
func (gb *gradBuilder) op1(op string, attrs Attrs, args ...*Value) *Value {
	return gb.op(op, attrs, args...)[0]
}

// sum adds contributions up (one: itself).
func (gb *gradBuilder) sum(vs []*Value) *Value {
	s := vs[0]
	for _, v := range vs[1:] {
		s = gb.op1("add", nil, s, v)
	}
	return s
}

// reduceTo sums dy, of the shape of a use's operand after broadcasting, down to the shape of
// arg (the trailing dimensions of dy's shape).
func (gb *gradBuilder) reduceTo(dy, arg *Value) *Value {
	if dy.Type.Shape.Equal(arg.Type.Shape) {
		return dy
	}
	return gb.op1("sum_rows", Attrs{"keep": Int(int64(len(arg.Type.Shape)))}, dy)
}

// nameGrads renames each gradient output to "d.<weight name>" when the backward pass wrote it
// for that weight alone and the name is free, so dumps read well.
func (gb *gradBuilder) nameGrads(ds, ws []*Value) {
	seen := map[*Value]int{}
	for _, d := range ds {
		seen[d]++
	}
	for i, d := range ds {
		name := "d." + ws[i].Name
		if gb.mine[d] && seen[d] == 1 && !gb.names[name] && isIdent(name) {
			gb.names[name] = true
			d.Name = name
		}
	}
}

// WithLoss returns a copy of g with an input targets (i32, one per row of logits) and the mean
// cross-entropy of the value called logits against it as the only output, the loss; training
// differentiates it with Grad.
func WithLoss(g *Graph, logits, targets string) (*Graph, *Value, error) {
	cg := g.Clone()
	z := cg.Value(logits)
	if z == nil || len(z.Type.Shape) != 2 {
		return nil, nil, fmt.Errorf("graph: loss: no logits %%%s of two dimensions", logits)
	}
	if cg.Value(targets) != nil || cg.Value("loss") != nil {
		return nil, nil, fmt.Errorf("graph: loss: %%%s or %%loss already defined", targets)
	}
	t := &Value{Name: targets, Type: T(tensor.I32, z.Type.Shape[0]), Kind: KindInput}
	cg.Inputs = append(cg.Inputs, t)
	n := &Node{Op: "cross_entropy", Args: []*Value{z, t}}
	loss := &Value{Name: "loss", Type: T(tensor.F32), Kind: KindResult, Def: n}
	n.Outs = []*Value{loss}
	cg.Nodes = append(cg.Nodes, n)
	cg.Outputs = []*Value{loss}
	if err := Verify(cg); err != nil {
		return nil, nil, err
	}
	return cg, loss, nil
}
