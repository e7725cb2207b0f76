// This file implements conversions between float32 and the two 16-bit float formats:
// IEEE 754 binary16 (F16) and bfloat16 (BF16). Narrowing rounds to nearest, ties to even,
// as x86 F16C (vcvtps2ph with imm 0) does; Inf, NaN and subnormals are handled exactly.
package tensor

import "math"

// F16ToF32 widens an IEEE binary16 value to float32. The conversion is exact; NaN payloads
// are carried over bit for bit (no quieting).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0: // signed zero
		return math.Float32frombits(sign)
	}
	// Subnormal half: man * 2^-24. Normalise so the leading one becomes the implicit bit.
	e := uint32(113) // biased float32 exponent of 2^-14
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// F32ToF16 narrows a float32 to IEEE binary16 with round-to-nearest-even. Values too large
// become ±Inf, values too small become (signed) zero or a subnormal. NaNs stay NaN with the
// same sign and the top payload bits, and are made quiet (as F16C does).
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man == 0 {
			return sign | 0x7c00
		}
		return sign | 0x7e00 | uint16(man>>13)
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Result is a half subnormal (or zero): m = full >> (14 - e) with rounding.
		if e < -10 {
			return sign // below half the smallest subnormal: rounds to zero
		}
		full := man | 0x800000
		shift := uint(14 - e)
		m := full >> shift
		rem := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && m&1 == 1) {
			m++ // may carry into the smallest normal, which is the right encoding
		}
		return sign | uint16(m)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry out of the mantissa bumps the exponent, up to Inf: correct
	}
	return sign | uint16(h)
}

// BF16ToF32 widens a bfloat16 value to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows a float32 to bfloat16 with round-to-nearest-even. NaN stays NaN (quiet).
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
