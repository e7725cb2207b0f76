package kernels

// k4TileAMX is the Q4_K AMX-INT8 tile (quant_amxk_amd64.s; see tileAMXFunc and quant_amxk.go).
//
//go:noescape
func k4TileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// k4TileAMX4 is k4TileAMX on tiles of 4 tokens (amxQ8Config4).
//
//go:noescape
func k4TileAMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// k6TileAMX is the Q6_K AMX-INT8 tile (amxK6Config).
//
//go:noescape
func k6TileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// k6TileAMX4 is k6TileAMX on tiles of 4 tokens (amxK6Config4).
//
//go:noescape
func k6TileAMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// unpackK4AMX unpacks nb Q4_K super-blocks of a 16-row group (see unpackK4AMXRef).
//
//go:noescape
func unpackK4AMX(dst, src *byte, rs int, nb int)

// unpackK6AMX unpacks nb Q6_K super-blocks of a 16-row group (see unpackK6AMXRef).
//
//go:noescape
func unpackK6AMX(dst, src *byte, rs int, nb int)

func init() {
	if useAMXInt8 {
		tileKAMX = [2]tileAMXFunc{k4TileAMX, k6TileAMX}
		tileKAMX4 = [2]tileAMXFunc{k4TileAMX4, k6TileAMX4}
		unpackKAMX = [2]unpackKFunc{unpackK4AMX, unpackK6AMX}
	}
}

// k4DotZ1..k4DotZ4 compute the Q4_K AMX tile's results for 1-4 tokens on AVX-512 VNNI, bit
// for bit (see kDotFunc).
//
//go:noescape
func k4DotZ1(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k4DotZ2(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k4DotZ3(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k4DotZ4(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

func init() {
	if useAMXInt8 {
		dotsKZ = [2][5]kDotFunc{{nil, k4DotZ1, k4DotZ2, k4DotZ3, k4DotZ4}, {nil, k6DotZ1, k6DotZ2, k6DotZ3, k6DotZ4}}
	}
}

// k6DotZ1..k6DotZ4 are k4DotZ1..4 for Q6_K.
//
//go:noescape
func k6DotZ1(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k6DotZ2(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k6DotZ3(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)

//go:noescape
func k6DotZ4(w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int)
