package kvtransfer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

var testLayout = Layout{Layers: 2, BlockSize: 4, KRowBytes: 8, VRowBytes: 8, DType: "fp16"}

func testBlocks(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, testLayout.BlockBytes())
		for j := range out[i] {
			out[i][j] = byte(r.Uint32())
		}
	}
	return out
}

func encode(t *testing.T, l Layout, blocks [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeAll(context.Background(), &buf, l, &sliceSource{blocks: blocks, n: len(blocks)}, func() {}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(data []byte, want Layout) ([][]byte, error) {
	rd, err := NewReader(bytes.NewReader(data), want)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		b, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
}

// TestWireRoundTrip: blocks come back equal, zero blocks included.
func TestWireRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		blocks := testBlocks(n, uint64(n))
		got, err := decode(encode(t, testLayout, blocks), testLayout)
		if err != nil {
			t.Fatalf("%d blocks: %v", n, err)
		}
		if len(got) != n {
			t.Fatalf("%d blocks came back as %d", n, len(got))
		}
		for i := range got {
			if !bytes.Equal(got[i], blocks[i]) {
				t.Fatalf("block %d differs", i)
			}
		}
	}
}

// TestWireTruncated: every prefix of a stream is an error (unexpected EOF naming where), never a
// short success.
func TestWireTruncated(t *testing.T) {
	data := encode(t, testLayout, testBlocks(3, 7))
	for n := range len(data) {
		_, err := decode(data[:n], testLayout)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("stream cut at %d of %d bytes: %v", n, len(data), err)
		}
	}
	_, err := decode(data[:len(data)/2], testLayout)
	if !strings.Contains(err.Error(), "block 1 of 3") {
		t.Errorf("a cut in the middle names no block: %v", err)
	}
}

// TestWireCorrupt: flipping any bit of a stream is an error.
func TestWireCorrupt(t *testing.T) {
	data := encode(t, testLayout, testBlocks(2, 9))
	for i := range data {
		for _, bit := range []byte{1, 0x80} {
			bad := bytes.Clone(data)
			bad[i] ^= bit
			if _, err := decode(bad, testLayout); err == nil {
				t.Fatalf("bit %#x of byte %d flipped: no error", bit, i)
			}
		}
	}
}

// TestWireLayoutAndVersion: another layout or version is refused, naming both sides.
func TestWireLayoutAndVersion(t *testing.T) {
	data := encode(t, testLayout, testBlocks(1, 1))
	other := testLayout
	other.DType = "q8_0"
	if _, err := decode(data, other); err == nil || !strings.Contains(err.Error(), "fp16") || !strings.Contains(err.Error(), "q8_0") {
		t.Errorf("layout mismatch: %v", err)
	}
	bad := bytes.Clone(data)
	bad[4] = 2
	if _, err := decode(bad, testLayout); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testLayout, 1)
	if err := w.WriteBlock(make([]byte, 3)); err == nil {
		t.Error("wrote a block of the wrong size")
	}
	if err := w.Close(); err == nil {
		t.Error("closed a transfer short of its blocks")
	}
}
