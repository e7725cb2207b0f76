// This file implements the trainer's side of ZeRO: the optimizer's views of the owned shards
// (each parameter's intersection with this rank's piece of its unit, moments in the shard
// space), and the checkpoint rule for sharded state (an element of the shard space belongs to
// the DP rank owning that piece of the unit).
package train

import "github.com/llmcloud/llmcloud/train/nn"

// zeroViews are the optimizer's views over the owned pieces and the gradient parts this rank
// counts in the global norm.
func (p *parallel) zeroViews(net *nn.Model, counted func(name string) bool) (views []view, norm [][]float32) {
	for i, q := range net.Params() {
		l := p.loc[i]
		zu := p.zero.Units[l.unit]
		a, b := max(l.off, zu.Lo), min(l.off+len(q.W), zu.Hi)
		if a >= b {
			continue
		}
		w, g := p.zero.Piece(l.unit)
		v := view{w: w[a-zu.Lo : b-zu.Lo], g: g[a-zu.Lo : b-zu.Lo], off: zu.Off + a - zu.Lo, decay: len(q.Shape) >= 2}
		views = append(views, v)
		if counted(q.Name) {
			norm = append(norm, v.g)
		}
	}
	return views, norm
}

// shardedPart is parameter i's statePart for a buffer of the shard space (moments, or the
// stage-3 weights): this rank owns and takes the parameter's values inside its piece.
func (t *Trainer) shardedPart(i int, q nn.Param, full []int, owner bool, sb []float32) statePart {
	p := t.par
	l := p.loc[i]
	zu := p.zero.Units[l.unit]
	n := product(q.Shape)
	a, b := max(l.off, zu.Lo), min(l.off+n, zu.Hi)
	tpRank, tpSize := t.Net.TP()
	return statePart{shape: full,
		put: func(dst []float32) {
			if !owner || a >= b {
				return
			}
			tmp := make([]float32, n)
			copy(tmp[a-l.off:b-l.off], sb[zu.Off+a-zu.Lo:zu.Off+b-zu.Lo])
			nn.Unshard(dst, tmp, q.Name, full, tpRank, tpSize)
		},
		take: func(src []float32) {
			if a >= b {
				return
			}
			tmp := make([]float32, n)
			nn.Shard(tmp, src, q.Name, full, tpRank, tpSize)
			copy(sb[zu.Off+a-zu.Lo:zu.Off+b-zu.Lo], tmp[a-l.off:b-l.off])
		}}
}
