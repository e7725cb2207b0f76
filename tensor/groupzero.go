// This file implements the zero-corrected block types Q4_0Z and Q8_0Z, the lossless load-time
// form of Hugging Face AWQ / GPTQ weights (format/hfquant). Such a checkpoint stores
// w = s·(q − z) with an fp16 scale s and an integer zero z per group of input columns. Its
// Data is plain Q4_0 (Q8_0) rows with d = s and the code q (q − 128 for 8 bits), so the fast
// Q4_0 / Q8_0 kernels run them unchanged; those rows stand for s·(q − 8) (s·(q − 128)), and the
// per-group constant s·(8 − z) (s·(128 − z)) that makes up the difference is Zero.Corr. Both
// parts are exact in float32 (fp16 s times a small integer), so base + Corr is exactly s·(q − z).
// GPTQ's act-order checkpoints (desc_act, g_idx) are stored with the input columns sorted by
// group: Zero.Perm maps the stored column order back to the input columns.
package tensor

import "fmt"

// GroupZero is what a Q4_0Z / Q8_0Z weight [n, k] adds to its Q4_0 / Q8_0 rows:
// w[r][Perm[j]] = base[r][j] + Corr[(j/Group)*n + r] (Perm nil: the identity). Corr is
// group-major so that a token's correction is k/Group vector updates of the output (axpy).
type GroupZero struct {
	Group int       // stored columns per group: a multiple of 32 that divides k
	Corr  []float32 // [k/Group, n], row-major: the n rows' corrections of group 0, then group 1, ...
	Perm  []int32   // nil, or the k input columns: stored column j is input column Perm[j]
	// Codes is nil, or (Q4_0Z with Group a multiple of 128, ZeroCodes) the zero points in the
	// form the VNNI decode kernel folds into its integer dot product: [n, k/128], row-major,
	// Codes[r*(k/128)+u] = −z for row r's 128-column unit u, where the unit's weights are
	// d·(q − z) (d the blocks' scale, q their 4-bit codes). One byte per 128 weights.
	Codes []int8
}

// ZeroBase is the plain block type of a zero-corrected type (Q4_0 for Q4_0Z, Q8_0 for
// Q8_0Z); ok is false for other types.
func ZeroBase(t DType) (DType, bool) {
	switch t {
	case Q4_0Z:
		return Q4_0, true
	case Q8_0Z:
		return Q8_0, true
	}
	return 0, false
}

// Base returns the Q4_0 / Q8_0 view of a zero-corrected weight (same Data, no corrections).
func (t *Tensor) Base() *Tensor {
	bt, _ := ZeroBase(t.Type)
	return &Tensor{Name: t.Name, Type: bt, Shape: t.Shape, Data: t.Data}
}

// CheckZero validates a zero-corrected weight: 2-D, Data of the right size, Zero present and
// consistent with the shape.
func (t *Tensor) CheckZero() error {
	if _, ok := ZeroBase(t.Type); !ok {
		return fmt.Errorf("tensor %s: %s is not a zero-corrected type", t.Name, t.Type)
	}
	if err := t.Check(); err != nil {
		return err
	}
	z := t.Zero
	if len(t.Shape) != 2 {
		return fmt.Errorf("tensor %s: %s needs a 2-D shape, have %v", t.Name, t.Type, t.Shape)
	}
	n, k := t.Shape[0], t.Shape[1]
	switch {
	case z == nil:
		return fmt.Errorf("tensor %s: %s without its zero corrections", t.Name, t.Type)
	case z.Group <= 0 || z.Group%32 != 0 || k%z.Group != 0:
		return fmt.Errorf("tensor %s: %s group of %d columns does not divide %d into blocks of 32", t.Name, t.Type, z.Group, k)
	case len(z.Corr) != n*(k/z.Group):
		return fmt.Errorf("tensor %s: %s has %d corrections, want %d (%d rows x %d groups)", t.Name, t.Type, len(z.Corr), n*(k/z.Group), n, k/z.Group)
	case z.Perm != nil && len(z.Perm) != k:
		return fmt.Errorf("tensor %s: %s column order has %d entries, want %d", t.Name, t.Type, len(z.Perm), k)
	case z.Codes != nil && (t.Type != Q4_0Z || k%128 != 0 || len(z.Codes) != n*(k/128)):
		return fmt.Errorf("tensor %s: %s has %d zero codes, want %d (%d rows x %d units of 128, Q4_0Z only)", t.Name, t.Type, len(z.Codes), n*(k/128), n, k/128)
	}
	return nil
}

// DequantizeZero returns the weight [n, k] of a zero-corrected tensor as float32, in input
// column order.
func (t *Tensor) DequantizeZero() ([]float32, error) {
	if err := t.CheckZero(); err != nil {
		return nil, err
	}
	n, k := t.Shape[0], t.Shape[1]
	bt, _ := ZeroBase(t.Type)
	rb, _ := bt.RowBytes(k)
	out := make([]float32, n*k)
	row := make([]float32, k)
	for r := 0; r < n; r++ {
		if err := DequantizeRow(bt, t.Data[r*rb:(r+1)*rb], row); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		dst := out[r*k : (r+1)*k]
		for j, v := range row {
			c := j
			if t.Zero.Perm != nil {
				c = int(t.Zero.Perm[j])
			}
			dst[c] = v + t.Zero.Corr[(j/t.Zero.Group)*n+r]
		}
	}
	return out, nil
}

// PermuteRows returns the corrections of a zero-corrected weight with its rows reordered
// as rows[new] = old (used when whole rows move, e.g. the q/k RoPE permutation).
func (z *GroupZero) PermuteRows(k int, order []int) *GroupZero {
	n := len(order)
	c := make([]float32, len(z.Corr))
	for g := 0; g < k/z.Group; g++ {
		for dst, src := range order {
			c[g*n+dst] = z.Corr[g*n+src]
		}
	}
	var codes []int8
	if z.Codes != nil {
		nu := len(z.Codes) / n
		codes = make([]int8, len(z.Codes))
		for dst, src := range order {
			copy(codes[dst*nu:(dst+1)*nu], z.Codes[src*nu:(src+1)*nu])
		}
	}
	return &GroupZero{Group: z.Group, Corr: c, Perm: z.Perm, Codes: codes}
}
