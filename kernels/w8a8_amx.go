// This file runs W8A8 GEMMs on AMX-INT8 tiles (Sapphire Rapids and later). The W8A8 pack
// (tensor/w8a8_pack.go) is already the AMX B tile's layout: a 16-row group's registers
// 16c..16c+15 (register j holding bytes 4j..4j+3 of row r in its dword lane r) are the tile of
// values 64c..64c+63, 1 KiB, contiguous. The activations are the one-token panels (each
// token's int8 values in order, so the A tile is 16 tokens at a stride of k bytes). One
// TDPBSUD multiplies 16 tokens x 64 values by 64 values x 16 rows; the int32 sums run over the
// whole k in the tile, and the epilogue is the VNNI tiles' one, so every result has the same
// bits as on the VNNI, AVX2 and Go tiles (TestW8A8Paths), and batch invariance holds.
package kernels

// w8AMXTile is w8TileAMX2 / w8TileAMX1 (w8a8_amx_amd64.s): tiles token tiles of 16 x two (one)
// 16-row groups over nc chunks of 64 values.
type w8AMXTile func(cfg *byte, w *byte, gbytes int, a *byte, astride int, nc int, dx *float32, cx *int32, buf *int32, out *float32, ostride int, tiles int)

// w8AMX2 and w8AMX1 are the assembly where AMX-INT8 is usable (useAMXInt8), else nil.
var w8AMX2, w8AMX1 w8AMXTile

// w8AMXMin is the fewest tokens a W8A8 GEMM runs on the AMX tiles: below it the VNNI tiles
// (the wide panels of 8 tokens, or one-token panels) waste less of a 16-token tile.
const w8AMXMin = 16

// w8AMXConfig is the LDTILECFG block of the W8A8 tiles: palette 1; tmm0 the A tile, tmm1-2
// the B tiles and tmm4-5 the C tiles, each 16 rows of 64 bytes.
var w8AMXConfig = func() *[64]byte {
	var c [64]byte
	c[0] = 1
	for _, t := range []int{0, 1, 2, 4, 5} {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return &c
}()

// w8AMXOn reports whether a W8A8 GEMM of m tokens and k values per row runs on AMX tiles.
func w8AMXOn(m, k int) bool {
	return w8AMX2 != nil && useAMX && m >= w8AMXMin && k%64 == 0 && k > 0
}

// w8RunAMX computes out = x · wᵀ on AMX tiles from a's one-token panels (quantized with amx
// set: rows padded to a multiple of 16 tokens): items of two groups, each over every token
// tile, taken dynamically. Row and token tails go through a scratch tile.
func w8RunAMX(p *Pool, out []float32, a *w8Acts, pk *w8Pack) {
	n, k, gb := pk.n, pk.k, pk.gbytes
	nc := k / 64
	full := a.m / amxToks
	tail := a.m - full*amxToks
	cfg := &w8AMXConfig[0]
	runItems(p, a.m, (pk.ng+1)/2, func(c int) {
		g := 2 * c
		G := min(2, pk.ng-g)
		r := g * w8Rows
		tile := w8AMX2
		if G == 1 {
			tile = w8AMX1
		}
		var buf [2 * amxToks * w8Rows]int32
		var scratch [amxToks * 2 * w8Rows]float32
		w := &pk.data[g*gb]
		spill := func(t0, T int) { // one tile into scratch, its T tokens' rows copied out
			tile(cfg, w, gb, &a.x[t0*k], k, nc, &a.dx[t0], &a.cx[t0], &buf[0], &scratch[0], 2*w8Rows, 1)
			for t := 0; t < T; t++ {
				copy(out[(t0+t)*n+r:(t0+t)*n+min(n, r+G*w8Rows)], scratch[t*2*w8Rows:])
			}
		}
		if full > 0 {
			if r+G*w8Rows <= n {
				tile(cfg, w, gb, &a.x[0], k, nc, &a.dx[0], &a.cx[0], &buf[0], &out[r], n, full)
			} else {
				for i := 0; i < full; i++ {
					spill(i*amxToks, amxToks)
				}
			}
		}
		if tail > 0 {
			spill(full*amxToks, tail)
		}
	})
}
