// This file implements DequantizeRow: the reference (plain Go) decoders for every DType,
// following llama.cpp's block layouts (ggml-common.h) and its dequantize_row_* arithmetic.
// Products are wrapped in float32() so the compiler cannot fuse them into FMAs; results are
// then bit-identical to ggml's scalar code when that is compiled without FMA contraction.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// checkRow validates that src holds exactly n elements of dt.
func checkRow(dt DType, nbytes, n int) error {
	want, err := dt.RowBytes(n)
	if err != nil {
		return err
	}
	if nbytes != want {
		return fmt.Errorf("%s: %d elements need %d bytes, have %d", dt, n, want, nbytes)
	}
	return nil
}

// DequantizeRow decodes len(dst) elements of type dt from src into dst. len(dst) must be a
// multiple of the block size and src must hold exactly that many elements.
func DequantizeRow(dt DType, src []byte, dst []float32) error {
	if err := checkRow(dt, len(src), len(dst)); err != nil {
		return err
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(le16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le16(src[2*i:]))
		}
	case I32:
		for i := range dst {
			dst[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case U8:
		for i := range dst {
			dst[i] = float32(src[i])
		}
	case W8A8:
		dequantW8A8(src, dst)
	case Q8_0:
		dequantQ8_0(src, dst)
	case Q4_0:
		dequantQ4_0(src, dst)
	case Q4_K:
		dequantQ4_K(src, dst)
	case Q6_K:
		dequantQ6_K(src, dst)
	case MXFP4:
		dequantMXFP4(src, dst)
	default:
		return fmt.Errorf("dequantize: unsupported dtype %s", dt)
	}
	return nil
}

// Q8_0 block (34 bytes): f16 d, int8 qs[32]; x = d*q.
func dequantQ8_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*34 : b*34+34]
		d := F16ToF32(le16(blk))
		out := dst[b*32 : b*32+32]
		for j := range out {
			out[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// Q4_0 block (18 bytes): f16 d, qs[16]; element j (<16) is the low nibble of qs[j], element
// 16+j the high nibble; x = d*(q-8).
func dequantQ4_0(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*18 : b*18+18]
		d := F16ToF32(le16(blk))
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[2+j]
			out[j] = float32(int(q&0xf)-8) * d
			out[j+16] = float32(int(q>>4)-8) * d
		}
	}
}

// scaleMinK4 unpacks the j-th (0..7) 6-bit scale and min of a Q4_K block's 12 scale bytes:
// j<4: low 6 bits of q[j] and q[j+4]; j>=4: a nibble of q[j+4] plus the top 2 bits of q[j-4]
// (scale) or q[j] (min).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// Q4_K super-block (144 bytes, 256 elements): f16 d, f16 dmin, scales[12], qs[128]. Eight
// sub-blocks of 32 with 6-bit scale sc and min m: x = d*sc*q - dmin*m. Each run of 32 qs bytes
// holds two sub-blocks: low nibbles first, then high nibbles.
func dequantQ4_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*144 : b*144+144]
		d := F16ToF32(le16(blk))
		dmin := F16ToF32(le16(blk[2:]))
		scales := blk[4:16]
		qs := blk[16:144]
		out := dst[b*256 : b*256+256]
		for k := 0; k < 4; k++ {
			sc1, m1 := scaleMinK4(2*k, scales)
			sc2, m2 := scaleMinK4(2*k+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			q := qs[32*k : 32*k+32]
			o := out[64*k : 64*k+64]
			for l := 0; l < 32; l++ {
				o[l] = float32(d1*float32(q[l]&0xf)) - mm1
				o[l+32] = float32(d2*float32(q[l]>>4)) - mm2
			}
		}
	}
}

// Q6_K super-block (210 bytes, 256 elements): ql[128] low 4 bits, qh[64] high 2 bits,
// int8 scales[16] (one per 16 elements), f16 d; x = d*scale*(q-32). Per half (128 elements):
// ql[l] holds elements l (low nibble) and l+64 (high), ql[l+32] holds l+32 and l+96; qh[l]
// holds the high bits of l, l+32, l+64, l+96 in bit pairs 0,2,4,6.
func dequantQ6_K(src []byte, dst []float32) {
	for b := 0; b < len(dst)/256; b++ {
		blk := src[b*210 : b*210+210]
		d := F16ToF32(le16(blk[208:]))
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 128+32*h+32]
			sc := blk[192+8*h : 192+8*h+8]
			o := dst[b*256+128*h : b*256+128*h+128]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1 := int(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
				q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				o[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				o[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				o[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				o[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}
