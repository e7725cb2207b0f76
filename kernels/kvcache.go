// This file implements the storage formats of the paged KV cache (vLLM's --kv-cache-dtype):
// f32 (today's pool of []float32 rows), and byte rows of f16, bf16, q8_0 (int8 with one f16
// scale per group of 32 values, llama.cpp's Q8_0 block) and fp8 (OCP e4m3fn with one f16
// scale per group). A token's K (or V) row of Width values is stored as one row of RowBytes
// bytes: the values, then for q8_0/fp8 the group scales. Groups are 32 values when a head's
// width is a multiple of 32 or divides 32 (a group then spans several small heads), else one
// head. Scales are per token row, so appending a token never rewrites another token's values
// (a sequence's cache does not depend on what else was in the batch), and a scale is taken
// from the group's own values (amax/127, or amax/448 for e4m3).
package kernels

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmcloud/llmcloud/tensor"
)

// KVDType is a KV-cache storage type.
type KVDType uint8

// The KV-cache storage types.
const (
	KVF32 KVDType = iota
	KVF16
	KVBF16
	KVQ8
	KVFP8
)

// ParseKVDType parses --kv-cache-dtype: auto (f32), fp32/f32, fp16/f16/half, bf16, q8_0/int8,
// fp8/fp8_e4m3.
func ParseKVDType(s string) (KVDType, error) {
	switch strings.ToLower(s) {
	case "", "auto", "fp32", "f32", "float32", "float":
		return KVF32, nil
	case "fp16", "f16", "half", "float16":
		return KVF16, nil
	case "bf16", "bfloat16":
		return KVBF16, nil
	case "q8_0", "q8", "int8":
		return KVQ8, nil
	case "fp8", "fp8_e4m3", "e4m3":
		return KVFP8, nil
	}
	return 0, fmt.Errorf("unknown KV cache dtype %q (auto, fp32, fp16, bf16, q8_0, fp8)", s)
}

func (t KVDType) String() string {
	switch t {
	case KVF32:
		return "fp32"
	case KVF16:
		return "fp16"
	case KVBF16:
		return "bf16"
	case KVQ8:
		return "q8_0"
	case KVFP8:
		return "fp8_e4m3"
	}
	return fmt.Sprintf("KVDType(%d)", uint8(t))
}

// KVFormat is the layout of one pool's rows: Width values of heads HeadDim wide.
type KVFormat struct {
	Type     KVDType
	Width    int // values per row
	Group    int // values per scale (q8_0, fp8)
	RowBytes int // bytes per row (f32: 4*Width)
}

// NewKVFormat is the layout of rows of width values made of heads headDim wide (MLA's latent
// row: headDim = width).
func NewKVFormat(t KVDType, width, headDim int) (KVFormat, error) {
	if width < 0 || headDim <= 0 || (width > 0 && width%headDim != 0) {
		return KVFormat{}, fmt.Errorf("KV format: rows of %d values in heads of %d", width, headDim)
	}
	f := KVFormat{Type: t, Width: width}
	switch t {
	case KVF32:
		f.RowBytes = 4 * width
	case KVF16, KVBF16:
		f.RowBytes = 2 * width
	case KVQ8, KVFP8:
		f.Group = headDim
		if headDim%32 == 0 || (32%headDim == 0 && width%32 == 0) {
			f.Group = 32
		}
		f.RowBytes = width + 2*(width/f.Group)
	default:
		return KVFormat{}, fmt.Errorf("KV format: unknown dtype %d", t)
	}
	return f, nil
}

// BytesPerValue is the pool's bytes per stored value, scales included.
func (f KVFormat) BytesPerValue() float64 {
	if f.Width == 0 {
		return 0
	}
	return float64(f.RowBytes) / float64(f.Width)
}

// StoreRow writes src (Width values) as pool row r of dst.
func (f KVFormat) StoreRow(dst []byte, r int, src []float32) {
	row := dst[r*f.RowBytes : (r+1)*f.RowBytes]
	switch f.Type {
	case KVF16:
		for i, x := range src[:f.Width] {
			h := tensor.F32ToF16(x)
			row[2*i], row[2*i+1] = byte(h), byte(h>>8)
		}
	case KVBF16:
		for i, x := range src[:f.Width] {
			h := tensor.F32ToBF16(x)
			row[2*i], row[2*i+1] = byte(h), byte(h>>8)
		}
	case KVQ8, KVFP8:
		lim := float32(127)
		if f.Type == KVFP8 {
			lim = 448
		}
		for g := 0; g < f.Width/f.Group; g++ {
			xs := src[g*f.Group : (g+1)*f.Group]
			var amax float32
			for _, x := range xs {
				amax = max(amax, float32(math.Abs(float64(x))))
			}
			h := tensor.F32ToF16(amax / lim)
			d := tensor.F16ToF32(h)
			if d > 0 && amax/d > lim*1.001 { // the f16 rounding went down: keep |x/d| <= lim
				h++
				d = tensor.F16ToF32(h)
			}
			s := f.Width + 2*g
			row[s], row[s+1] = byte(h), byte(h>>8)
			id := float32(0)
			if d > 0 {
				id = 1 / d
			}
			for i, x := range xs {
				if f.Type == KVQ8 {
					row[g*f.Group+i] = byte(int8(max(-127, min(127, math.RoundToEven(float64(x*id))))))
				} else {
					row[g*f.Group+i] = fp8Encode(x * id)
				}
			}
		}
	default:
		panic("kernels: StoreRow of an f32 KV format")
	}
}

// loadRowsRef is the plain reference of LoadRows.
func (f KVFormat) loadRowsRef(dst []float32, src []byte, r0, n, off, hd int) {
	for i := 0; i < n; i++ {
		row := src[(r0+i)*f.RowBytes : (r0+i+1)*f.RowBytes]
		o := dst[i*hd : (i+1)*hd]
		for j := range o {
			e := off + j
			switch f.Type {
			case KVF16:
				o[j] = tensor.F16ToF32(uint16(row[2*e]) | uint16(row[2*e+1])<<8)
			case KVBF16:
				o[j] = tensor.BF16ToF32(uint16(row[2*e]) | uint16(row[2*e+1])<<8)
			case KVQ8, KVFP8:
				s := f.Width + 2*(e/f.Group)
				d := tensor.F16ToF32(uint16(row[s]) | uint16(row[s+1])<<8)
				if f.Type == KVQ8 {
					o[j] = float32(int8(row[e])) * d
				} else {
					o[j] = fp8Table[row[e]] * d
				}
			}
		}
	}
}

// LoadRows dequantizes values off..off+hd-1 of the n pool rows r0.. of src into dst
// ([n, hd]), on the assembly kernels where the CPU has them.
func (f KVFormat) LoadRows(dst []float32, src []byte, r0, n, off, hd int) {
	switch {
	case Reference:
		f.loadRowsRef(dst, src, r0, n, off, hd)
	case !kvLoadAsm(f, dst, src, r0, n, off, hd):
		f.loadRowsGo(dst, src, r0, n, off, hd)
	}
}

// loadRowsGo is LoadRows in Go, for the CPUs and shapes the assembly does not cover: the
// reference's arithmetic with the format's switch and the scale lookups out of the loops.
func (f KVFormat) loadRowsGo(dst []float32, src []byte, r0, n, off, hd int) {
	for i := 0; i < n; i++ {
		row := src[(r0+i)*f.RowBytes : (r0+i+1)*f.RowBytes]
		o := dst[i*hd : (i+1)*hd]
		switch f.Type {
		case KVF16, KVBF16:
			b := row[2*off : 2*(off+hd)]
			for j := range o {
				h := uint16(b[2*j]) | uint16(b[2*j+1])<<8
				if f.Type == KVF16 {
					o[j] = tensor.F16ToF32(h)
				} else {
					o[j] = math.Float32frombits(uint32(h) << 16)
				}
			}
		case KVQ8, KVFP8:
			for j := 0; j < hd; {
				e := off + j
				g := e / f.Group
				end := min(hd, (g+1)*f.Group-off)
				s := f.Width + 2*g
				d := tensor.F16ToF32(uint16(row[s]) | uint16(row[s+1])<<8)
				vals := row[e : off+end]
				if f.Type == KVQ8 {
					for k, c := range vals {
						o[j+k] = float32(int8(c)) * d
					}
				} else {
					for k, c := range vals {
						o[j+k] = fp8Table[c] * d
					}
				}
				j = end
			}
		}
	}
}

// fp8Table decodes e4m3fn: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities,
// S.1111.111 is NaN, the largest finite value 448.
var fp8Table = func() (t [256]float32) {
	for c := range t {
		e, m := (c>>3)&15, c&7
		var v float64
		switch {
		case e == 15 && m == 7:
			v = math.NaN()
		case e == 0:
			v = float64(m) / 8 * math.Ldexp(1, -6)
		default:
			v = (1 + float64(m)/8) * math.Ldexp(1, e-7)
		}
		if c&0x80 != 0 {
			v = -v
		}
		t[c] = float32(v)
	}
	return
}()

// fp8Encode rounds x to the nearest e4m3fn value (ties to even), saturating at ±448.
func fp8Encode(x float32) byte {
	var sign byte
	if x < 0 || (x == 0 && math.Signbit(float64(x))) {
		sign, x = 0x80, -x
	}
	a := float64(x)
	switch {
	case a != a:
		return sign | 0x7f
	case a >= 448:
		return sign | 0x7e
	case a < math.Ldexp(1, -6): // subnormal: multiples of 2^-9 (code 8 is the smallest normal)
		return sign | byte(math.RoundToEven(a*512))
	}
	_, e := math.Frexp(a) // a = frac * 2^e, frac in [0.5, 1)
	e--                   // a = 1.m * 2^e
	m := math.RoundToEven((a/math.Ldexp(1, e) - 1) * 8)
	if m == 8 {
		e, m = e+1, 0
	}
	c := byte(e+7)<<3 | byte(m)
	if c > 0x7e {
		c = 0x7e
	}
	return sign | c
}
