package kernels

// w8TileAMX2 and w8TileAMX1 are the W8A8 AMX tiles (w8a8_amx_amd64.s; see w8AMXTile).
//
//go:noescape
func w8TileAMX2(cfg *byte, w *byte, gbytes int, a *byte, astride int, nc int, dx *float32, cx *int32, buf *int32, out *float32, ostride int, tiles int)

//go:noescape
func w8TileAMX1(cfg *byte, w *byte, gbytes int, a *byte, astride int, nc int, dx *float32, cx *int32, buf *int32, out *float32, ostride int, tiles int)

func init() {
	if useAMXInt8 {
		w8AMX2, w8AMX1 = w8TileAMX2, w8TileAMX1
	}
}
