// Fuzz targets for the block codecs: arbitrary bytes must decode without panicking, and
// arbitrary floats (NaN, Inf, huge) must encode without panicking.
package tensor

import (
	"encoding/binary"
	"math"
	"testing"
)

var fuzzTypes = []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K}

func FuzzDequantizeRow(f *testing.F) {
	f.Add(uint8(5), make([]byte, 144))
	f.Add(uint8(6), make([]byte, 210))
	f.Add(uint8(3), []byte{0xff, 0x7b, 1, 2, 3})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dt := fuzzTypes[int(which)%len(fuzzTypes)]
		nb := len(data) / dt.BlockBytes()
		dst := make([]float32, nb*dt.BlockElems())
		if err := DequantizeRow(dt, data[:nb*dt.BlockBytes()], dst); err != nil {
			t.Fatalf("%s: exact-size row rejected: %v", dt, err)
		}
		if len(data)%dt.BlockBytes() != 0 && DequantizeRow(dt, data, dst) == nil {
			t.Fatalf("%s: %d bytes for %d elements accepted", dt, len(data), len(dst))
		}
	})
}

func FuzzQuantizeRow(f *testing.F) {
	seed := make([]byte, 4*256)
	binary.LittleEndian.PutUint32(seed[8:], math.Float32bits(float32(math.NaN())))
	binary.LittleEndian.PutUint32(seed[12:], math.Float32bits(float32(math.Inf(1))))
	f.Add(uint8(5), seed)
	f.Add(uint8(6), seed)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dt := fuzzTypes[int(which)%len(fuzzTypes)]
		n := len(data) / 4 / dt.BlockElems() * dt.BlockElems()
		src := make([]float32, n)
		for i := range src {
			src[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		rb, _ := dt.RowBytes(n)
		out := make([]byte, rb)
		if err := QuantizeRow(dt, src, out); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, n)
		if err := DequantizeRow(dt, out, back); err != nil {
			t.Fatal(err)
		}
	})
}
