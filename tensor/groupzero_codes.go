package tensor

import (
	"encoding/binary"
	"math"
)

// ZeroCodes returns the zero codes of a Q4_0Z weight (GroupZero.Codes: −z per row and
// 128-column unit) recovered from its Q4_0 rows and corrections, or nil when the weight cannot
// be written that way: not Q4_0Z, groups that are not a multiple of 128 columns (a unit would
// span two zero points), the four blocks of a unit with different scales, or a correction that
// is not d·(8 − z) for an integer −z in int8's range. Exact: Corr = s·(8 − z) is exact in
// float32 (fp16 s times a small integer), so Corr/d is the integer 8 − z. A unit whose scale
// is 0 contributes nothing and gets −8 (plain Q4_0).
func (t *Tensor) ZeroCodes() []int8 {
	if t.Type != Q4_0Z || t.CheckZero() != nil {
		return nil
	}
	n, k, z := t.Shape[0], t.Shape[1], t.Zero
	if z.Group%128 != 0 {
		return nil
	}
	nu, rb := k/128, k/32*18
	codes := make([]int8, n*nu)
	for r := 0; r < n; r++ {
		row := t.Data[r*rb : (r+1)*rb]
		for u := 0; u < nu; u++ {
			unit := row[u*72 : u*72+72]
			d := binary.LittleEndian.Uint16(unit)
			for b := 1; b < 4; b++ {
				if binary.LittleEndian.Uint16(unit[18*b:]) != d {
					return nil
				}
			}
			c := z.Corr[(u*128/z.Group)*n+r]
			ds := F16ToF32(d)
			if ds == 0 {
				if c != 0 {
					return nil
				}
				codes[r*nu+u] = -8
				continue
			}
			v := float64(c) / float64(ds) // 8 − z
			if v != math.Trunc(v) || v-8 < math.MinInt8 || v-8 > math.MaxInt8 || float32(float32(v)*ds) != c {
				return nil
			}
			codes[r*nu+u] = int8(v - 8)
		}
	}
	return codes
}
