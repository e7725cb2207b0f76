// This file is GPTQ onto the integer group grid of Hugging Face AWQ/GPTQ checkpoints: per
// output row and group of G input columns, an fp16 scale s and an integer zero z, the weight
// s·(q − z) with q in [0, 2^bits − 1]. The sweep is the one of gptq.go (columns left to right,
// each rounding error spread over the columns not yet quantized through the upper Cholesky
// factor of the damped inverse Hessian, lazy updates per batch of columns); a group's (s, z)
// are chosen by round-to-nearest's rule (hfquant.GroupParams) from the weights as updated so
// far when the sweep reaches the group's first column. With act-order the columns are swept
// in order of decreasing Hessian diagonal and the groups are runs of G columns in that order:
// the result carries g_idx (the group of each original column), as GPTQ's desc_act writes it.
package quant

import (
	"fmt"
	"sort"

	"github.com/llmcloud/llmcloud/format/hfquant"
)

// IntGrid is the integer group grid: Bits per code, Group input columns per (scale, zero)
// (≤ 0: one group per row), zeros at least MinZero (1 for GPTQ v1 checkpoints, which store
// z − 1).
type IntGrid struct {
	Bits, Group, MinZero int
}

func (g IntGrid) group(cols int) int {
	if g.Group <= 0 {
		return cols
	}
	return g.Group
}

// RTNInt is round-to-nearest onto the grid (hfquant.RTN).
func RTNInt(w []float32, rows, cols int, g IntGrid) (*hfquant.Linear, error) {
	return hfquant.RTN(w, rows, cols, g.Bits, g.group(cols), g.MinZero)
}

// GPTQIntOptions tune GPTQInt.
type GPTQIntOptions struct {
	Damp     float64 // relative damping (0: 0.01)
	Block    int     // lazy-update batch in columns (0: 128)
	ActOrder bool    // sweep columns by decreasing Hessian diagonal (desc_act), with g_idx
}

// GPTQInt quantizes w [rows, cols] onto grid g given h = X^T X [cols, cols].
func GPTQInt(w []float32, rows, cols int, h []float64, g IntGrid, o GPTQIntOptions) (*hfquant.Linear, error) {
	G := g.group(cols)
	if len(w) != rows*cols || cols%G != 0 || g.Bits < 2 || g.Bits > 8 {
		return nil, fmt.Errorf("quant: gptq: cannot quantize [%d %d] (%d values) to %d bits in groups of %d", rows, cols, len(w), g.Bits, G)
	}
	if len(h) != cols*cols {
		return nil, fmt.Errorf("quant: gptq: Hessian of %d values for %d columns", len(h), cols)
	}
	if o.Damp <= 0 {
		o.Damp = 0.01
	}
	if o.Block <= 0 {
		o.Block = 128
	}
	// perm[j] is the original column swept j-th.
	perm := make([]int, cols)
	for i := range perm {
		perm[i] = i
	}
	if o.ActOrder {
		sort.SliceStable(perm, func(a, b int) bool { return h[perm[a]*cols+perm[a]] > h[perm[b]*cols+perm[b]] })
	}
	hd := make([]float64, cols*cols)
	var mean float64
	for a, pa := range perm {
		for b, pb := range perm {
			hd[a*cols+b] = h[pa*cols+pb]
		}
		mean += hd[a*cols+a]
	}
	mean /= float64(cols)
	if mean <= 0 {
		mean = 1
	}
	// wt[j] is swept column j over all rows (contiguous).
	wt := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for j, src := range perm {
			wt[j*rows+r] = w[r*cols+src]
		}
	}
	for j := 0; j < cols; j++ {
		if hd[j*cols+j] <= 0 { // a column no calibration row reached: its weight does not matter
			hd[j*cols+j] = 1
			clear(wt[j*rows : (j+1)*rows])
		}
		hd[j*cols+j] += o.Damp * mean
	}
	u, ok := invUpperCholesky(hd, cols)
	if !ok {
		return nil, fmt.Errorf("quant: gptq: the damped Hessian is not positive definite (damp %g)", o.Damp)
	}
	ng := cols / G
	l := &hfquant.Linear{Out: rows, In: cols, Bits: g.Bits, Group: G, Codes: make([]uint8, rows*cols),
		Scales: make([]float32, ng*rows), Zeros: make([]int32, ng*rows)}
	codes := make([]uint8, rows*cols) // [swept column][row]
	xs := make([]float32, G)
	errs := make([]float32, o.Block*rows)
	for c0 := 0; c0 < cols; c0 += o.Block {
		c1 := min(c0+o.Block, cols)
		for j := c0; j < c1; j++ {
			gi := j / G
			if j%G == 0 { // this group's grid, from the weights as updated so far
				for r := 0; r < rows; r++ {
					for i := range xs {
						xs[i] = wt[(j+i)*rows+r]
					}
					l.Scales[gi*rows+r], l.Zeros[gi*rows+r] = hfquant.GroupParams(xs, g.Bits, g.MinZero)
				}
			}
			col := wt[j*rows : (j+1)*rows]
			e := errs[(j-c0)*rows : (j-c0+1)*rows]
			ujj := float32(u[j*cols+j])
			s, z := l.Scales[gi*rows:(gi+1)*rows], l.Zeros[gi*rows:(gi+1)*rows]
			for r, x := range col {
				q := hfquant.Code(x, s[r], z[r], g.Bits)
				codes[j*rows+r] = q
				e[r] = (x - s[r]*float32(int32(q)-z[r])) / ujj
			}
			for i := j + 1; i < c1; i++ {
				axpy(wt[i*rows:(i+1)*rows], e, -float32(u[j*cols+i]))
			}
		}
		for i := c1; i < cols; i++ {
			dst := wt[i*rows : (i+1)*rows]
			for j := c0; j < c1; j++ {
				if uji := u[j*cols+i]; uji != 0 {
					axpy(dst, errs[(j-c0)*rows:(j-c0+1)*rows], -float32(uji))
				}
			}
		}
	}
	for j, src := range perm {
		for r := 0; r < rows; r++ {
			l.Codes[r*cols+src] = codes[j*rows+r]
		}
	}
	if o.ActOrder {
		l.GIdx = make([]int32, cols)
		for j, src := range perm {
			l.GIdx[src] = int32(j / G)
		}
	}
	return l, nil
}
