package kernels

// qkRowsZ runs attnQKRowsZ_{hd} (hd 64 or 128).
func qkRowsZ(hd int, q, k *float32, ldk int, koff *int, n4 int, s *float32, lds, nk int, scale float32) {
	if hd == 64 {
		attnQKRowsZ_64(q, k, ldk, koff, n4, s, lds, nk, scale)
	} else {
		attnQKRowsZ_128(q, k, ldk, koff, n4, s, lds, nk, scale)
	}
}

// pvRowsZ runs attnPVRowsZ_{nb} (1 <= nb <= 6).
func pvRowsZ(nb int, out *float32, ooff *int, p *float32, poff *int, v *float32, ldv int, voff *int, nk int) {
	switch nb {
	case 1:
		attnPVRowsZ_1(out, ooff, p, poff, v, ldv, voff, nk)
	case 2:
		attnPVRowsZ_2(out, ooff, p, poff, v, ldv, voff, nk)
	case 3:
		attnPVRowsZ_3(out, ooff, p, poff, v, ldv, voff, nk)
	case 4:
		attnPVRowsZ_4(out, ooff, p, poff, v, ldv, voff, nk)
	case 5:
		attnPVRowsZ_5(out, ooff, p, poff, v, ldv, voff, nk)
	default:
		attnPVRowsZ_6(out, ooff, p, poff, v, ldv, voff, nk)
	}
}
