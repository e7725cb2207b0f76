// This file holds the references of split (each row of x cut into consecutive pieces) and of
// concat (the pieces' rows joined: split's inverse and backward).
package ref

import "github.com/llmcloud/llmcloud/graph"

func init() {
	opFuncs["split"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		x := t[0]
		S := x.Last()
		rows := len(x.F) / S
		var out []*Tensor
		off := 0
		for _, s64 := range a.Ints("sizes") {
			s := int(s64)
			shape := append(append([]int(nil), x.Shape[:len(x.Shape)-1]...), s)
			y := zerosF(shape)
			for r := 0; r < rows; r++ {
				for j := 0; j < s; j++ {
					y.F[r*s+j] = x.F[r*S+off+j]
				}
			}
			out = append(out, y)
			off += s
		}
		return out, nil
	}
	opFuncs["concat"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		S := 0
		for _, p := range t {
			S += p.Last()
		}
		rows := len(t[0].F) / t[0].Last()
		y := zerosF(append(append([]int(nil), t[0].Shape[:len(t[0].Shape)-1]...), S))
		off := 0
		for _, p := range t {
			s := p.Last()
			for r := 0; r < rows; r++ {
				copy(y.F[r*S+off:r*S+off+s], p.F[r*s:(r+1)*s])
			}
			off += s
		}
		return []*Tensor{y}, nil
	}
}
