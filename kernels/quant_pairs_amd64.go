// This file declares the AVX2 Q4_0 pair tile (quant_pairs_amd64.s) and installs it when the
// CPU has AVX2, FMA and F16C (on AVX-512 VNNI CPUs the VNNI tiles run first).
package kernels

// q4_0TilePRxT computes an R-row x T-token tile of a Q4_0 matmul over np block pairs, the
// activations in pair layout (see matmulP; twin refTileP(R, T)).
//
//go:noescape
func q4_0TileP1x1(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP1x2(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP1x3(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP1x4(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP2x1(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP2x2(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP2x3(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

//go:noescape
func q4_0TileP2x4(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int)

// asmTilesP are the assembly pair tiles, installed into tilesP when the CPU has AVX2.
var asmTilesP = [3][5]tileFunc{
	1: {1: q4_0TileP1x1, 2: q4_0TileP1x2, 3: q4_0TileP1x3, 4: q4_0TileP1x4},
	2: {1: q4_0TileP2x1, 2: q4_0TileP2x2, 3: q4_0TileP2x3, 4: q4_0TileP2x4},
}

func init() {
	if hasQuantAVX2 {
		tilesP = asmTilesP
	}
}
