// This file plans what forward nodes keep for their backward (RMSNorm's 1/rms, attention's
// probabilities) like the value buffers: each lives from its node's instruction to the last
// instruction of a backward node reading it, so a node whose backward reads a recomputed copy
// keeps its buffer only while it runs, and copies of different blocks share one.
package trainexec

import "github.com/llmcloud/llmcloud/graph"

// keepSide declares that n, compiled as the next instruction, keeps size values for its
// backward (p.side[n], given by plan).
func (p *Program) keepSide(n *graph.Node, size int) {
	p.sideAt[n], p.sideSize[n] = len(p.code), size
}

// readSide records that the next instruction reads fw's side buffer; false when fw keeps none.
func (p *Program) readSide(fw *graph.Node) bool {
	if _, ok := p.sideSize[fw]; !ok {
		return false
	}
	p.sideEnd[fw] = max(p.sideEnd[fw], len(p.code))
	return true
}

// sideValues stands a value of a fixed shape for each side buffer, for plan.
func (p *Program) sideValues() map[*graph.Node]*graph.Value {
	vs := map[*graph.Node]*graph.Value{}
	for n, size := range p.sideSize {
		v := &graph.Value{Name: n.Name() + ".side", Kind: graph.KindResult}
		p.inner[v], p.sym[v] = size, false
		vs[n] = v
	}
	return vs
}
