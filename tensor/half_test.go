// Tests for the F16/BF16 conversions: exhaustive round trips, hand-checked values and a
// nearest-even property check over a sweep of float32 bit patterns.
package tensor

import (
	"math"
	"testing"
)

func TestF16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		back := F32ToF16(f)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, f)
			}
			if back != h|0x200 { // quiet bit set, sign and payload kept
				t.Fatalf("NaN %#04x round-trips to %#04x, want %#04x", h, back, h|0x200)
			}
			continue
		}
		if back != h {
			t.Fatalf("F16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestBF16RoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		back := F32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if back != h|0x40 {
				t.Fatalf("BF16 NaN %#04x -> %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("BF16 %#04x -> %v -> %#04x", h, f, back)
		}
	}
}

func TestF16HandChecked(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{0.1, 0x2e66},   // 0.0999755859375 is nearest
		{65504, 0x7bff}, // largest finite half
		{65519, 0x7bff}, // below the midpoint to Inf
		{65520, 0x7c00}, // exact midpoint: ties to even (Inf)
		{1e10, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{0x1p-14, 0x0400},               // smallest normal
		{0x1p-24, 0x0001},               // smallest subnormal
		{0x1p-25, 0x0000},               // half of it: tie to even -> 0
		{0x1.000002p-25, 0x0001},        // just above the tie
		{0x3p-25, 0x0002},               // 1.5 ulp: tie to even -> 2
		{0x1p-14 - 0x1p-24, 0x03ff},     // largest subnormal
		{1 + 0x1p-11, 0x3c00},           // tie between 0x3c00 and 0x3c01 -> even
		{1 + 3*0x1p-11, 0x3c02},         // tie between 0x3c01 and 0x3c02 -> even
		{1 + 0x1p-11 + 0x1p-20, 0x3c01}, // above the tie
		{-(0x1p-14 - 0x1p-25), 0x8400},  // rounds up into the smallest normal
	}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", h)
	}
	// A NaN whose payload lives only in the low 13 bits must not turn into Inf.
	if h := F32ToF16(math.Float32frombits(0x7f800001)); h != 0x7e00 {
		t.Errorf("F32ToF16(sNaN 0x7f800001) = %#04x, want 0x7e00", h)
	}
	if f := F16ToF32(0x0001); f != 0x1p-24 {
		t.Errorf("F16ToF32(0x0001) = %g", f)
	}
	if f := F16ToF32(0x7bff); f != 65504 {
		t.Errorf("F16ToF32(0x7bff) = %g", f)
	}
}

func TestBF16HandChecked(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80},
		{-1, 0xbf80},
		{1 + 0x1p-8, 0x3f80},           // tie -> even
		{1 + 3*0x1p-8, 0x3f82},         // tie -> even (up)
		{1 + 0x1p-8 + 0x1p-20, 0x3f81}, // above the tie
		{math.MaxFloat32, 0x7f80},      // rounds to Inf
		{float32(math.Inf(1)), 0x7f80},
		{0x1p-133, 0x0001}, // subnormals are just truncated bits
	}
	for _, c := range cases {
		if got := F32ToBF16(c.f); got != c.h {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := F32ToBF16(math.Float32frombits(0x7f800001)); h&0x7f80 != 0x7f80 || h&0x7f == 0 {
		t.Errorf("F32ToBF16(sNaN) = %#04x, not a NaN", h)
	}
}

// TestF16NearestEven checks, for a sweep of float32 bit patterns, that no other half is closer
// and that ties go to the even mantissa.
func TestF16NearestEven(t *testing.T) {
	for b := uint64(0); b < 1<<32; b += 1021 {
		f := math.Float32frombits(uint32(b))
		if math.IsNaN(float64(f)) {
			continue
		}
		h := F32ToF16(f)
		got := float64(F16ToF32(h))
		x := float64(f)
		if math.IsInf(got, 0) {
			if math.Abs(x) < 65520 {
				t.Fatalf("%g -> Inf", f)
			}
			continue
		}
		err := math.Abs(got - x)
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (nb^h)&0x8000 != 0 {
				continue
			}
			e2 := math.Abs(float64(F16ToF32(nb)) - x)
			if e2 < err || (e2 == err && h&1 == 1) {
				t.Fatalf("F32ToF16(%g) = %#04x (err %g), but %#04x is better (err %g)", f, h, err, nb, e2)
			}
		}
	}
}
