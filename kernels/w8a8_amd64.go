// This file installs the W8A8 tiles of w8a8_amd64.s: AVX-512 VNNI where the CPU has it
// (VPDPBUSD, unsigned weights), else AVX2 (VPMADDUBSW on |w| and sign(w)·q).
package kernels

import "unsafe"

//go:noescape
func w8TileZ1x8(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

//go:noescape
func w8TileZ2x8(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

//go:noescape
func w8TileZ1x1(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

//go:noescape
func w8TileA1x4(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

//go:noescape
func w8TileA1x1(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

func w8PeakZ(iters int) // in w8a8_amd64.s; w8a8_bench_test.go

//go:noescape
func w8AmaxZ(x *float32, n16 int, m *[16]float32)

//go:noescape
func w8QuantZ(x *float32, n16 int, id float32, dst *byte, st int, sums *[16]int32)

func w8AmaxAsm(x []float32) float32 {
	var m [16]float32
	w8AmaxZ(&x[0], len(x)/16, &m)
	r := m[0]
	for _, v := range m[1:] {
		r = max(r, v)
	}
	return r
}

func w8QuantAsm(x []float32, id float32, dst *byte, st int) int32 {
	var s [16]int32
	w8QuantZ(&x[0], len(x)/16, id, dst, st, &s)
	var r int32
	for _, v := range s {
		r += v
	}
	return r
}

// w8VNNI and w8AVX2 are the assembly sets (w8VNNI.g1p8 == nil: not available).
var (
	w8VNNI = w8Kernels{name: "vnni", unsigned: true, g1p8: w8TileZ1x8, g2p8: w8TileZ2x8, g1p1: w8TileZ1x1}
	w8AVX2 = w8Kernels{name: "avx2", g1p8: w8A1x8, g2p8: w8A2x8, g1p1: w8TileA1x1}
)

// w8A1x8 runs the AVX2 4-token tile on both halves of a wide panel.
func w8A1x8(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int) {
	w8TileA1x4(w, gbytes, xs, nq, dx, cx, out, ostride)
	w8TileA1x4(w, gbytes, (*byte)(unsafe.Add(unsafe.Pointer(xs), 16)), nq,
		(*float32)(unsafe.Add(unsafe.Pointer(dx), 16)), (*int32)(unsafe.Add(unsafe.Pointer(cx), 16)),
		(*float32)(unsafe.Add(unsafe.Pointer(out), 16*ostride)), ostride)
}

// w8A2x8 runs w8A1x8 on two groups.
func w8A2x8(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int) {
	w8A1x8(w, gbytes, xs, nq, dx, cx, out, ostride)
	w8A1x8((*byte)(unsafe.Add(unsafe.Pointer(w), gbytes)), gbytes, xs, nq, dx, cx,
		(*float32)(unsafe.Add(unsafe.Pointer(out), 4*w8Rows)), ostride)
}

func init() {
	switch {
	case hasQuantVNNI:
		w8Active = w8VNNI
		w8AmaxFast, w8QuantFast = w8AmaxAsm, w8QuantAsm
	case hasQuantAVX2:
		w8Active = w8AVX2
	default:
		w8VNNI, w8AVX2 = w8Kernels{}, w8Kernels{}
	}
	if !hasQuantVNNI {
		w8VNNI = w8Kernels{}
	}
}
