// This file declares the AVX2 Q8_0 half-interleaved pair tiles (quant_pairs8h_amd64.s, generated
// by internal/asmgen/pairs8h) and installs them when the CPU has AVX2, FMA and F16C (on AVX-512
// VNNI CPUs the VNNI tiles run first).
package kernels

//go:generate sh -c "cd ../ && go run ./kernels/internal/asmgen/pairs8h > kernels/quant_pairs8h_amd64.s"

// q8_0TileH1xT computes a 1-row x T-token tile of a Q8_0 matmul over np block pairs, the
// activations in pair order (q8Acts.xz) with the lane scales q8Acts.dp (see matmulQ8H; twin
// refTileH8(T)).

//go:noescape
func q8_0TileH1x1(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x2(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x3(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x4(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x5(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x6(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x7(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q8_0TileH1x8(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

// asmTilesH8 are the assembly Q8_0 half-interleaved pair tiles, installed into tilesH8 when the
// CPU has AVX2.
var asmTilesH8 = [9]tileFunc{1: q8_0TileH1x1, 2: q8_0TileH1x2, 3: q8_0TileH1x3, 4: q8_0TileH1x4,
	5: q8_0TileH1x5, 6: q8_0TileH1x6, 7: q8_0TileH1x7, 8: q8_0TileH1x8}

func init() {
	if hasQuantAVX2 {
		tilesH8 = asmTilesH8
	}
}
