package kernels

// useF16x8 selects the eight-stream F16 decode (gemvF16x8, AVX-512) in gemvFloatStreams, on
// the CPUs where eight streams were measured faster than four (streams8Default: Intel).
var useF16x8 = hasF16x8 && streams8Default()

// hasF16x8 reports that gemvF16x8 can run here (tests cover it whatever useF16x8 is).
var hasF16x8 = useAVX512

// gemvF16x8 sets out[r] = Σ_i w[r*ldw/2+i]*x[i] for r < 8, bit for bit gemvF16x4's sum of
// each row; k is a multiple of 8. Requires AVX-512F.
//
//go:noescape
func gemvF16x8(w *uint16, ldw int, x *float32, k int, out *float32)
