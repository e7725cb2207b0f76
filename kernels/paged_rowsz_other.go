//go:build !amd64

package kernels

func qkRowsZ(hd int, q, k *float32, ldk int, koff *int, n4 int, s *float32, lds, nk int, scale float32) {
	panic("no asm")
}

func pvRowsZ(nb int, out *float32, ooff *int, p *float32, poff *int, v *float32, ldv int, voff *int, nk int) {
	panic("no asm")
}
