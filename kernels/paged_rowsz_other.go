//go:build !amd64

package kernels

import "unsafe"

func qkRowsZ(hd int, kt KVDType, q *float32, k unsafe.Pointer, ldk int, koff *int, n4 int, s *float32, lds, nk int, scale float32) {
	panic("no asm")
}

func pvRowsZ(nb int, vt KVDType, out *float32, ooff *int, p *float32, poff *int, v unsafe.Pointer, ldv int, voff *int, nk int) {
	panic("no asm")
}
