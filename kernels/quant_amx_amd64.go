package kernels

// q8TileAMX is the AMX-INT8 tile (quant_amx_amd64.s; see tileAMXFunc).
//
//go:noescape
func q8TileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// q8TileAMX4 is q8TileAMX on tiles of 4 tokens (amxQ8Config4).
//
//go:noescape
func q8TileAMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// unpackQ4AMX rewrites nb blocks of a Q4_0 16-row group for q8TileAMX (see unpackAMXRef).
//
//go:noescape
func unpackQ4AMX(dst *byte, src *byte, nb int)

func init() {
	if useAMXInt8 {
		tileAMX, tileAMX4, unpackAMX = q8TileAMX, q8TileAMX4, unpackQ4AMX
	}
}
