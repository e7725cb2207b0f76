package kernels

// kvAsm selects the AVX2+F16C row loaders of kvcache_amd64.s.
var kvAsm = useFloatAsm

//go:noescape
func kvF16Load(dst *float32, src *byte, stride, hd, n int)

//go:noescape
func kvBF16Load(dst *float32, src *byte, stride, hd, n int)

//go:noescape
func kvQ8Load(dst *float32, src, scales *byte, stride, hd, n int)

//go:noescape
func kvFP8Load(dst *float32, src, scales *byte, stride, hd, n int)

// kvLoadAsm is LoadRows on the assembly loaders; false when they do not cover the case.
func kvLoadAsm(f KVFormat, dst []float32, src []byte, r0, n, off, hd int) bool {
	if !kvAsm || n <= 0 || hd <= 0 {
		return false
	}
	_ = dst[n*hd-1]
	_ = src[(r0+n)*f.RowBytes-1]
	base := r0 * f.RowBytes
	switch f.Type {
	case KVF16, KVBF16:
		if hd%8 != 0 || off+hd > f.Width {
			return false
		}
		if f.Type == KVF16 {
			kvF16Load(&dst[0], &src[base+2*off], f.RowBytes, hd, n)
		} else {
			kvBF16Load(&dst[0], &src[base+2*off], f.RowBytes, hd, n)
		}
		return true
	case KVQ8, KVFP8:
		if f.Group != 32 || hd%32 != 0 || off%32 != 0 || off+hd > f.Width {
			return false
		}
		if f.Type == KVQ8 {
			kvQ8Load(&dst[0], &src[base+off], &src[base+f.Width+2*(off/32)], f.RowBytes, hd, n)
		} else {
			kvFP8Load(&dst[0], &src[base+off], &src[base+f.Width+2*(off/32)], f.RowBytes, hd, n)
		}
		return true
	}
	return false
}
