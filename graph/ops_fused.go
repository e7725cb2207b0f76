// This file registers the fused ops the serving passes (fuse_*.go) produce beyond those of
// ops.go: qkv_rope, the per-row work between the q/k/v projections and attention (biases,
// Qwen3's per-head q/k norms, RoPE) done in one pass over the rows.
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// QKVRopeArgs says where qkv_rope's optional arguments sit for the attributes a: after q, k,
// v and pos come the biases bq, bk, bv (bias=1), the norms qn, kn (qk_norm=1), then the
// optional RoPE frequency divisors. Each index is -1 when absent.
func QKVRopeArgs(a Attrs, nargs int) (bias, norm, freqs int) {
	bias, norm, freqs = -1, -1, -1
	i := 4
	if a.Int("bias", 0) != 0 {
		bias, i = i, i+3
	}
	if a.Int("qk_norm", 0) != 0 {
		norm, i = i, i+2
	}
	if nargs > i {
		freqs = i
	}
	return bias, norm, freqs
}

func init() {
	register(&OpDef{Name: "qkv_rope", MinArgs: 4, MaxArgs: 10,
		Attrs: []AttrSpec{{"heads", AttrInt, true}, {"kv_heads", AttrInt, true}, {"head_dim", AttrInt, true},
			{"theta", AttrFloat, true}, {"neox", AttrInt, false}, {"bias", AttrInt, false},
			{"qk_norm", AttrInt, false}, {"eps", AttrFloat, false}, {"mscale", AttrFloat, false},
			{"freq_scale", AttrFloat, false}, YarnAttrs[0], YarnAttrs[1], YarnAttrs[2], YarnAttrs[3]},
		Doc: "fused, row by row: q, k, v f32[n,..] plus biases bq, bk, bv (bias=1); per-head rms_norm of q, k by qn, kn " +
			"f32[head_dim] (qk_norm=1, eps); rope of q, k at pos i32[n] (optional freqs f32[head_dim/2], mscale, freq_scale) -> (q, k, v)",
		Infer: qkvRopeType})
}

func qkvRopeType(a []Type, at Attrs) ([]Type, error) {
	heads, kvh, hd := at.Int("heads", 0), at.Int("kv_heads", 0), at.Int("head_dim", 0)
	if err := want(heads > 0 && kvh > 0 && hd > 0 && hd%2 == 0, "heads %d, kv_heads %d, head_dim %d: want positive, head_dim even", heads, kvh, hd); err != nil {
		return nil, err
	}
	q, k, v, pos := a[0], a[1], a[2], a[3]
	if err := want(isFloat(q) && len(q.Shape) == 2 && q.Shape[1] == D(int(heads*hd)), "q must be f32[n,%d], is %v", heads*hd, q); err != nil {
		return nil, err
	}
	kt := Type{tensor.F32, Shape{q.Shape[0], D(int(kvh * hd))}}
	if err := want(k.Equal(kt) && v.Equal(kt), "k and v must be %v, are %v and %v", kt, k, v); err != nil {
		return nil, err
	}
	if err := want(pos.DType == tensor.I32 && pos.Shape.Equal(q.Shape[:1]), "pos must be i32[%v], is %v", q.Shape[0], pos); err != nil {
		return nil, err
	}
	bias, norm, freqs := QKVRopeArgs(at, len(a))
	end := 4
	vec := func(i int, size int64, what string) error {
		return want(isFloat(a[i]) && a[i].Shape.Equal(Dims(int(size))), "%s must be f32[%d], is %v", what, size, a[i])
	}
	if bias >= 0 {
		if bias+3 > len(a) {
			return nil, fmt.Errorf("bias=1 needs bq, bk, bv")
		}
		for i, sz := range []int64{heads * hd, kvh * hd, kvh * hd} {
			if err := vec(bias+i, sz, "bias"); err != nil {
				return nil, err
			}
		}
		end = bias + 3
	}
	if norm >= 0 {
		if norm+2 > len(a) {
			return nil, fmt.Errorf("qk_norm=1 needs qn, kn")
		}
		for i := range 2 {
			if err := vec(norm+i, hd, "norm weight"); err != nil {
				return nil, err
			}
		}
		end = norm + 2
	}
	if freqs >= 0 {
		if err := vec(freqs, hd/2, "freqs"); err != nil {
			return nil, err
		}
		end = freqs + 1
	}
	if err := want(end == len(a), "%d arguments, the attributes call for %d", len(a), end); err != nil {
		return nil, err
	}
	return []Type{q, k, v}, nil
}
