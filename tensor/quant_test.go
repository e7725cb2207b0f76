// Hand-checked tests of the block layouts and reference quantizers (independent of the shared
// model files), plus error cases and float round trips through Convert.
package tensor

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

func TestQ8_0QuantizeHand(t *testing.T) {
	x := make([]float32, 32)
	x[3], x[5], x[7] = 127, -62.5, 0.5
	out := make([]byte, 34)
	if err := QuantizeRow(Q8_0, x, out); err != nil {
		t.Fatal(err)
	}
	if d := binary.LittleEndian.Uint16(out); d != 0x3c00 { // d = 127/127 = 1
		t.Errorf("d = %#04x, want 0x3c00", d)
	}
	// roundf rounds halves away from zero: -62.5 -> -63, 0.5 -> 1.
	if q := []int8{int8(out[2+3]), int8(out[2+5]), int8(out[2+7]), int8(out[2+0])}; q[0] != 127 || q[1] != -63 || q[2] != 1 || q[3] != 0 {
		t.Errorf("q = %v, want [127 -63 1 0]", q)
	}
	back := make([]float32, 32)
	if err := DequantizeRow(Q8_0, out, back); err != nil {
		t.Fatal(err)
	}
	if back[3] != 127 || back[5] != -63 || back[7] != 1 {
		t.Errorf("dequantized %v %v %v", back[3], back[5], back[7])
	}
}

func TestQ4_0QuantizeHand(t *testing.T) {
	x := make([]float32, 32)
	for j := range x {
		x[j] = float32(j - 16) // max magnitude is x[0] = -16, so d = 2, q = trunc(x/2 + 8.5)
	}
	out := make([]byte, 18)
	if err := QuantizeRow(Q4_0, x, out); err != nil {
		t.Fatal(err)
	}
	if d := binary.LittleEndian.Uint16(out); d != 0x4000 {
		t.Errorf("d = %#04x, want 0x4000 (2.0)", d)
	}
	// Byte j: low nibble = element j, high nibble = element 16+j.
	for j, want := range map[int]byte{0: 0x80, 1: 0x91, 15: 0xf8} {
		if got := out[2+j]; got != want {
			t.Errorf("qs[%d] = %#02x, want %#02x", j, got, want)
		}
	}
	back := make([]float32, 32)
	if err := DequantizeRow(Q4_0, out, back); err != nil {
		t.Fatal(err)
	}
	if back[0] != -16 || back[16] != 0 || back[17] != 2 || back[31] != 14 { // 15 clamps to level 7
		t.Errorf("dequantized %v", back)
	}
}

func TestQ4_KDequantizeHand(t *testing.T) {
	blk := make([]byte, 144)
	binary.LittleEndian.PutUint16(blk[0:], 0x3c00) // d = 1
	binary.LittleEndian.PutUint16(blk[2:], 0x3c00) // dmin = 1
	sc := blk[4:16]
	// Sub-block 1: scale 5, min 7 (low 6 bits of sc[1], sc[5]). Sub-block 5: scale 0x23,
	// min 0x11 (low nibbles in sc[9], top two bits in sc[1] and sc[5]).
	sc[1] = 0x85
	sc[5] = 0x47
	sc[9] = 0x13
	qs := blk[16:]
	qs[0] = 0x20    // element 32 (sub-block 1, high nibble of the first run): q = 2
	qs[64+3] = 0xa0 // element 128+32+3 = 163 (sub-block 5): q = 10
	qs[32+4] = 0x06 // element 64+4 = 68 (sub-block 2, scale 0, min 0)
	y := make([]float32, 256)
	if err := DequantizeRow(Q4_K, blk, y); err != nil {
		t.Fatal(err)
	}
	if y[32] != 5*2-7 {
		t.Errorf("y[32] = %v, want 3", y[32])
	}
	if y[163] != 35*10-17 {
		t.Errorf("y[163] = %v, want 333", y[163])
	}
	if y[33] != -7 || y[160] != -17 || y[68] != 0 || y[0] != 0 {
		t.Errorf("y[33]=%v y[160]=%v y[68]=%v y[0]=%v", y[33], y[160], y[68], y[0])
	}
}

func TestQ6_KDequantizeHand(t *testing.T) {
	blk := make([]byte, 210)
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	binary.LittleEndian.PutUint16(blk[208:], 0x3800) // d = 0.5
	for i := range sc {
		sc[i] = byte(int8(i + 1))
	}
	sc[6] = byte(0xfe) // -2
	// Element 0: low 4 bits in ql[0] low nibble, high 2 bits in qh[0] bits 0-1; scale sc[0].
	ql[0] = 0x05
	qh[0] = 0x03 // q = 0x35 = 53 -> 21
	// Element 101 = 96+5: ql[37] high nibble, qh[5] bits 6-7; scale sc[6].
	ql[37] = 0x70
	qh[5] = 0x40 // q = 0x17 = 23 -> -9
	// Element 128+64+20 = 212: ql[64+20] high nibble, qh[32+20] bits 4-5; scale sc[8+1+4].
	ql[84] = 0xf0
	qh[52] = 0x20 // q = 0x2f = 47 -> 15
	y := make([]float32, 256)
	if err := DequantizeRow(Q6_K, blk, y); err != nil {
		t.Fatal(err)
	}
	if y[0] != 0.5*1*21 || y[101] != 0.5*-2*-9 || y[212] != 0.5*14*15 {
		t.Errorf("y[0]=%v y[101]=%v y[212]=%v", y[0], y[101], y[212])
	}
	if y[1] != 0.5*1*-32 { // all-zero bits decode to -32
		t.Errorf("y[1] = %v", y[1])
	}
}

func TestQuantRoundTripQuality(t *testing.T) {
	// Smooth, sign-varying data of two rows of 256.
	x := make([]float32, 512)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37) * (1 + float64(i%7)))
	}
	for dt, bound := range map[DType]float32{F16: 0.004, BF16: 0.04, Q8_0: 0.04, Q6_K: 0.2, Q4_0: 1, Q4_K: 0.6} {
		n, _ := dt.RowBytes(len(x))
		q := make([]byte, n)
		if err := QuantizeRow(dt, x, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := DequantizeRow(dt, q, y); err != nil {
			t.Fatal(err)
		}
		var worst float32
		for i := range x {
			worst = max(worst, abs32(x[i]-y[i]))
		}
		if worst > bound {
			t.Errorf("%s: max error %v > %v", dt, worst, bound)
		}
	}
	// An all-zero block stays exactly zero in every format.
	zero := make([]float32, 256)
	for _, dt := range []DType{Q8_0, Q4_0, Q4_K, Q6_K} {
		n, _ := dt.RowBytes(256)
		q := make([]byte, n)
		if err := QuantizeRow(dt, zero, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, 256)
		DequantizeRow(dt, q, y)
		for i := range y {
			if y[i] != 0 {
				t.Fatalf("%s: zero block decodes to %v at %d", dt, y[i], i)
			}
		}
	}
}

func TestRowErrors(t *testing.T) {
	if err := DequantizeRow(Q4_0, make([]byte, 17), make([]float32, 32)); err == nil {
		t.Error("short Q4_0 row accepted")
	}
	if err := DequantizeRow(Q8_0, make([]byte, 34), make([]float32, 31)); err == nil {
		t.Error("31-element Q8_0 row accepted")
	}
	if err := QuantizeRow(I32, make([]float32, 4), make([]byte, 16)); err == nil {
		t.Error("quantize to I32 accepted")
	}
	if err := QuantizeRow(DType(99), nil, nil); err == nil {
		t.Error("unknown dtype accepted")
	}
	tt := &Tensor{Name: "w", Type: F32, Shape: []int{2, 48}, Data: make([]byte, 2*48*4)}
	if _, err := Convert(tt, Q8_0); err == nil {
		t.Error("Convert of 48 columns to Q8_0 accepted")
	}
	bad := &Tensor{Name: "w", Type: F16, Shape: []int{4}, Data: make([]byte, 6)}
	if _, err := bad.Float32(); err == nil {
		t.Error("Float32 of a tensor with short data accepted")
	}
}

func TestConvertFloatRoundTrip(t *testing.T) {
	// Every non-NaN F16 value survives F16 -> F32 -> F16; likewise for BF16.
	for _, dt := range []DType{F16, BF16} {
		data := make([]byte, 0, 1<<17)
		for i := 0; i < 1<<16; i++ {
			h := uint16(i)
			var f float32
			if dt == F16 {
				f = F16ToF32(h)
			} else {
				f = BF16ToF32(h)
			}
			if math.IsNaN(float64(f)) {
				continue
			}
			data = binary.LittleEndian.AppendUint16(data, h)
		}
		src := &Tensor{Name: "all", Type: dt, Shape: []int{len(data) / 2}, Data: data}
		mid, err := Convert(src, F32)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Convert(mid, dt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Data, src.Data) {
			t.Errorf("%s -> F32 -> %s is not the identity", dt, dt)
		}
	}
	// Values representable in both F16 and BF16 survive F16 -> BF16 -> F16.
	vals := []float32{0, 1, -2, 0.5, 1.5, 65280, 0x1p-14, -0.75}
	data := make([]byte, 0, 2*len(vals))
	for _, v := range vals {
		data = binary.LittleEndian.AppendUint16(data, F32ToF16(v))
	}
	src := &Tensor{Name: "v", Type: F16, Shape: []int{len(vals)}, Data: data}
	mid, _ := Convert(src, BF16)
	back, err := Convert(mid, F16)
	if err != nil || !bytes.Equal(back.Data, data) {
		t.Errorf("F16 -> BF16 -> F16 changed exactly representable values (%v)", err)
	}
}
