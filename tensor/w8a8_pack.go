// This file holds the storage layout of a W8A8 tensor [n, k]: the matmul kernels' packed
// groups, so a converted weight is held once (kernels/w8a8.go reads it in place).
//
// Rows come in groups of W8A8GroupRows (16); a group is nq = ceil(k/4) blocks of 64 bytes
// (block j holds values 4j..4j+3 of row r at bytes 4r..4r+3), then the 16 row scales
// (float32, little-endian). Values are stored as w+128 (unsigned, the first operand of
// VPDPBUSD; the AVX2 and Go kernels flip them back). Padding (rows past n, values past k)
// holds w = 0 (byte 0x80) and scale 0.
//
// One row in the row form of QuantizeRowW8A8 (k int8 values, then the scale) is what
// DequantizeRow(W8A8, ...) decodes; RowData(r) of a W8A8 tensor returns that form (a copy),
// so row readers (inspect, convert, llama2c export, calibration) work unchanged.
package tensor

import "fmt"

// W8A8GroupRows is the number of rows per packed group.
const W8A8GroupRows = 16

// W8A8GroupBytes is the size of one packed group of rows of k values.
func W8A8GroupBytes(k int) int { return (k+3)/4*64 + 4*W8A8GroupRows }

// W8A8Bytes is the packed size of a W8A8 tensor of n rows of k values.
func W8A8Bytes(n, k int) int {
	return (n + W8A8GroupRows - 1) / W8A8GroupRows * W8A8GroupBytes(k)
}

// NewW8A8Data returns the packed storage for n rows of k values, padding set (rows not yet
// written are not: every row r < n must be set with W8A8SetRow).
func NewW8A8Data(n, k int) []byte {
	data := make([]byte, W8A8Bytes(n, k))
	nq, gb := (k+3)/4, W8A8GroupBytes(k)
	if n%W8A8GroupRows != 0 { // rows of the last group past n: w = 0
		g := n / W8A8GroupRows
		for r := n % W8A8GroupRows; r < W8A8GroupRows; r++ {
			for j := 0; j < nq; j++ {
				copy(data[g*gb+64*j+4*r:g*gb+64*j+4*r+4], []byte{0x80, 0x80, 0x80, 0x80})
			}
		}
	}
	return data
}

// W8A8SetRow writes row r (the row form: k int8 values, then the scale) into data.
// Different rows may be set concurrently.
func W8A8SetRow(data []byte, k, r int, row []byte) {
	g, lane := r/W8A8GroupRows, r%W8A8GroupRows
	nq, gb := (k+3)/4, W8A8GroupBytes(k)
	dst := data[g*gb : (g+1)*gb]
	for i := 0; i < 4*nq; i++ {
		v := byte(0)
		if i < k {
			v = row[i]
		}
		dst[64*(i/4)+4*lane+i%4] = v ^ 0x80
	}
	copy(dst[nq*64+4*lane:nq*64+4*lane+4], row[k:k+4])
}

// W8A8GetRow reads row r of data into row (k+4 bytes, the row form).
func W8A8GetRow(data []byte, k, r int, row []byte) {
	g, lane := r/W8A8GroupRows, r%W8A8GroupRows
	nq, gb := (k+3)/4, W8A8GroupBytes(k)
	src := data[g*gb : (g+1)*gb]
	for i := 0; i < k; i++ {
		row[i] = src[64*(i/4)+4*lane+i%4] ^ 0x80
	}
	copy(row[k:k+4], src[nq*64+4*lane:nq*64+4*lane+4])
}

// PackW8A8 returns the packed storage of n rows in the row form (k+4 bytes each).
func PackW8A8(rows []byte, n, k int) ([]byte, error) {
	if len(rows) != n*(k+4) {
		return nil, fmt.Errorf("w8a8: %d bytes for %d rows of %d values, want %d", len(rows), n, k, n*(k+4))
	}
	data := NewW8A8Data(n, k)
	for r := 0; r < n; r++ {
		W8A8SetRow(data, k, r, rows[r*(k+4):(r+1)*(k+4)])
	}
	return data, nil
}
