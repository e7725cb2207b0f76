// This file holds the reference of mla_attention (graph/ops_mla.go) in its plain,
// non-absorbed form: every token's per-head keys [W_UK_h c_t | kpe_t] and values W_UV_h c_t
// expanded from the latent, then causal attention within each sequence (the package's
// sequence layout), in float64. The serving kernel's absorbed form is checked against it.
package ref

import (
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

func init() {
	opFuncs["mla_attention"] = func(c *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		q, lat, kpe, pos, kvb := t[0], t[1], t[2], t[3], t[4]
		H, nope, rp, vd := int(a.Int("heads", 0)), int(a.Int("nope", 0)), int(a.Int("rope", 0)), int(a.Int("v_dim", 0))
		n, R, hd := q.Shape[0], lat.Shape[1], nope+rp
		ra := graph.Attrs{"head_dim": graph.Int(int64(rp)), "theta": a["theta"], "neox": graph.Int(a.Int("neox", 0))}
		for _, k := range []string{"mscale", "yarn_factor", "yarn_orig_ctx", "yarn_beta_fast", "yarn_beta_slow"} {
			if v, ok := a[k]; ok {
				ra[k] = v
			}
		}
		// q's rope parts as [n, H*rope], rotated, then put back.
		qpe := zerosF([]int{n, H * rp})
		for r := 0; r < n; r++ {
			for h := 0; h < H; h++ {
				copy(qpe.F[(r*H+h)*rp:(r*H+h+1)*rp], q.F[r*H*hd+h*hd+nope:r*H*hd+(h+1)*hd])
			}
		}
		ra["heads"] = graph.Int(int64(H))
		qpe, err := rope([]*Tensor{qpe, pos}, ra, 1)
		if err != nil {
			return nil, err
		}
		ra["heads"] = graph.Int(1)
		kr, err := rope([]*Tensor{kpe, pos}, ra, 1)
		if err != nil {
			return nil, err
		}
		qs := zerosF(q.Shape)
		copy(qs.F, q.F)
		k := zerosF([]int{n, H * hd})
		v := zerosF([]int{n, H * vd})
		for r := 0; r < n; r++ {
			cr := lat.F[r*R : (r+1)*R]
			for h := 0; h < H; h++ {
				copy(qs.F[r*H*hd+h*hd+nope:r*H*hd+(h+1)*hd], qpe.F[(r*H+h)*rp:(r*H+h+1)*rp])
				w := h * (nope + vd) // kv_b's first row of head h
				for i := 0; i < nope; i++ {
					k.F[r*H*hd+h*hd+i] = dot(kvb.F[(w+i)*R:(w+i+1)*R], cr)
				}
				copy(k.F[r*H*hd+h*hd+nope:r*H*hd+(h+1)*hd], kr.F[r*rp:(r+1)*rp])
				for i := 0; i < vd; i++ {
					v.F[r*H*vd+h*vd+i] = dot(kvb.F[(w+nope+i)*R:(w+nope+i+1)*R], cr)
				}
			}
		}
		scale := 1 / math.Sqrt(float64(hd))
		if s := a.Float("scale", 0); s > 0 {
			scale = s
		}
		y := zerosF([]int{n, H * vd})
		for r := 0; r < n; r++ {
			lo := c.start(r)
			m := r - lo + 1
			s, p := make([]float64, m), make([]float64, m)
			for h := 0; h < H; h++ {
				qh := qs.F[r*H*hd+h*hd : r*H*hd+(h+1)*hd]
				for j := 0; j < m; j++ {
					s[j] = dot(qh, k.F[(lo+j)*H*hd+h*hd:(lo+j)*H*hd+(h+1)*hd]) * scale
				}
				softmaxRow(p, s)
				for j := 0; j < m; j++ {
					for i := 0; i < vd; i++ {
						y.F[r*H*vd+h*vd+i] += p[j] * v.F[(lo+j)*H*vd+h*vd+i]
					}
				}
			}
		}
		return []*Tensor{y}, nil
	}
}
