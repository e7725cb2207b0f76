// This file holds the reference of qkv_rope, the serving fusion of the per-row work between
// the q/k/v projections and attention (registered by the serving executor's graph/ops_fused.go):
// q, k, v plus their biases (bias=1), q and k normalized per head (qk_norm=1, eps), then q and
// k rotated at pos (optional freqs). Its arguments are q, k, v, pos, then bq, bk, bv, then qn,
// kn, then freqs, each group present as the attributes say.
package ref

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
)

func init() {
	opFuncs["qkv_rope"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		q, k, v, pos := t[0], t[1], t[2], t[3]
		i := 4
		add := func(x, b *Tensor) *Tensor { return binary(x, b, func(x, y float64) float64 { return x + y }) }
		if a.Int("bias", 0) != 0 {
			if len(t) < i+3 {
				return nil, fmt.Errorf("bias=1 needs bq, bk, bv")
			}
			q, k, v, i = add(q, t[i]), add(k, t[i+1]), add(v, t[i+2]), i+3
		}
		if a.Int("qk_norm", 0) != 0 {
			if len(t) < i+2 {
				return nil, fmt.Errorf("qk_norm=1 needs qn, kn")
			}
			eps := a.Float("eps", 0)
			q, k, i = rmsNorm(q, t[i], eps), rmsNorm(k, t[i+1], eps), i+2
		}
		rargs := []*Tensor{nil, pos}
		if len(t) > i {
			rargs = append(rargs, t[i])
		}
		ra := graph.Attrs{"heads": a["heads"], "head_dim": a["head_dim"], "theta": a["theta"], "neox": graph.Int(a.Int("neox", 0)),
			"mscale": graph.Float(a.Float("mscale", 1)), "freq_scale": graph.Float(a.Float("freq_scale", 1))}
		graph.CopyYarn(ra, a)
		rargs[0] = q
		rq, err := rope(rargs, ra, 1)
		if err != nil {
			return nil, err
		}
		ra["heads"] = a["kv_heads"]
		rargs[0] = k
		rk, err := rope(rargs, ra, 1)
		if err != nil {
			return nil, err
		}
		return []*Tensor{rq, rk, v}, nil
	}
}
