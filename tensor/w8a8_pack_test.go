package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestW8A8Pack: a packed W8A8 tensor has the size ByteSize/Check expect, its rows read back
// (RowData) as written, padding is w = 0 with scale 0, and Float32 dequantizes every row.
func TestW8A8Pack(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 9))
	for _, sh := range [][2]int{{16, 64}, {13, 102}, {37, 5}, {1, 4}, {70, 256}} {
		n, k := sh[0], sh[1]
		rows := make([]byte, n*(k+4))
		want := make([]float32, n*k)
		src := make([]float32, k)
		for r := 0; r < n; r++ {
			for i := range src {
				src[i] = float32(rng.NormFloat64())
			}
			QuantizeRowW8A8(src, rows[r*(k+4):(r+1)*(k+4)])
			if err := DequantizeRow(W8A8, rows[r*(k+4):(r+1)*(k+4)], want[r*k:(r+1)*k]); err != nil {
				t.Fatal(err)
			}
		}
		data, err := PackW8A8(rows, n, k)
		if err != nil {
			t.Fatal(err)
		}
		w := &Tensor{Name: "w", Type: W8A8, Shape: []int{n, k}, Data: data}
		if err := w.Check(); err != nil {
			t.Fatalf("n=%d k=%d: %v", n, k, err)
		}
		for r := 0; r < n; r++ {
			if got := w.RowData(r); string(got) != string(rows[r*(k+4):(r+1)*(k+4)]) {
				t.Fatalf("n=%d k=%d row %d: %v, want %v", n, k, r, got, rows[r*(k+4):(r+1)*(k+4)])
			}
		}
		pad := make([]byte, k+4)
		for r := n; r < (n+15)/16*16; r++ {
			W8A8GetRow(data, k, r, pad)
			for i, b := range pad {
				if b != 0 {
					t.Fatalf("n=%d k=%d padding row %d byte %d = %d", n, k, r, i, b)
				}
			}
		}
		nq, gb := (k+3)/4, W8A8GroupBytes(k)
		for g := 0; g < (n+15)/16; g++ { // values past k: w = 0, stored as 0x80
			for r := 0; r < 16; r++ {
				for i := k; i < 4*nq; i++ {
					if b := data[g*gb+64*(i/4)+4*r+i%4]; b != 0x80 {
						t.Fatalf("n=%d k=%d group %d row %d column %d = %#x, want 0x80", n, k, g, r, i, b)
					}
				}
			}
		}
		f, err := w.Float32()
		if err != nil {
			t.Fatal(err)
		}
		for i := range f {
			if math.Float32bits(f[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d k=%d Float32[%d] = %g, want %g", n, k, i, f[i], want[i])
			}
		}
	}
	if _, err := PackW8A8(make([]byte, 10), 2, 4); err == nil {
		t.Fatal("PackW8A8 of the wrong size: no error")
	}
}
