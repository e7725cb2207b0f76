package tensor

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// zeroWeight makes a Q4_0Z weight [n, k] as hfquant.Repack does: per row and group an fp16
// scale (every block's d) and an integer zero z, Corr = s·(8 − z); it returns the zeros too.
func zeroWeight(rng *rand.Rand, n, k, group int) (*Tensor, []int) {
	nb := k / 32
	t := &Tensor{Name: "w", Type: Q4_0Z, Shape: []int{n, k}, Data: make([]byte, n*nb*18),
		Zero: &GroupZero{Group: group, Corr: make([]float32, n*k/group)}}
	zs := make([]int, n*k/group)
	for i := range t.Data {
		t.Data[i] = byte(rng.IntN(256))
	}
	for r := 0; r < n; r++ {
		for g := 0; g < k/group; g++ {
			s := F32ToF16(float32(rng.Float64()*0.01 + 1e-4))
			z := rng.IntN(17)
			zs[r*(k/group)+g] = z
			t.Zero.Corr[g*n+r] = F16ToF32(s) * float32(8-z)
			for b := g * group / 32; b < (g+1)*group/32; b++ {
				t.Data[(r*nb+b)*18], t.Data[(r*nb+b)*18+1] = byte(s), byte(s>>8)
			}
		}
	}
	return t, zs
}

// TestZeroCodes: the zero codes are −z of each row and 128-column unit, recovered exactly
// from the rows and corrections (groups of 128 and 256); a weight that cannot be written so
// (groups of 64, blocks of a unit with different scales, a correction that is not s times an
// integer) gets none; CheckZero refuses codes of the wrong length; PermuteRows moves them
// with the rows.
func TestZeroCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, g := range []int{128, 256} {
		w, zs := zeroWeight(rng, 7, 512, g)
		codes := w.ZeroCodes()
		if codes == nil {
			t.Fatalf("g%d: no codes", g)
		}
		for r := 0; r < 7; r++ {
			for u := 0; u < 4; u++ {
				if want := -zs[r*(512/g)+u*128/g]; int(codes[r*4+u]) != want {
					t.Fatalf("g%d row %d unit %d: code %d, want %d", g, r, u, codes[r*4+u], want)
				}
			}
		}
		w.Zero.Codes = codes
		if err := w.CheckZero(); err != nil {
			t.Fatal(err)
		}
		order := []int{3, 1, 0, 6, 5, 4, 2}
		p := w.Zero.PermuteRows(512, order)
		for dst, src := range order {
			if !slices.Equal(p.Codes[dst*4:dst*4+4], codes[src*4:src*4+4]) {
				t.Fatalf("g%d: permuted row %d has codes %v, row %d had %v", g, dst, p.Codes[dst*4:dst*4+4], src, codes[src*4:src*4+4])
			}
		}
		w.Zero.Codes = codes[1:]
		if err := w.CheckZero(); err == nil {
			t.Fatalf("g%d: codes of the wrong length accepted", g)
		}
	}
	w, _ := zeroWeight(rng, 4, 256, 64)
	if w.ZeroCodes() != nil {
		t.Fatal("codes for groups of 64")
	}
	w, _ = zeroWeight(rng, 4, 256, 128)
	w.Data[18*1] ^= 1 // block 1 of row 0: another scale than its unit's block 0
	if w.ZeroCodes() != nil {
		t.Fatal("codes for a unit with two scales")
	}
	w, _ = zeroWeight(rng, 4, 256, 128)
	w.Zero.Corr[0] = F16ToF32(uint16(w.Data[0])|uint16(w.Data[1])<<8) * 2.5 // 8 − z = 2.5
	if w.ZeroCodes() != nil {
		t.Fatal("codes for a correction that is not an integer multiple of the scale")
	}
}
