// This file holds the reference of split: each row of x cut into consecutive pieces.
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
}
