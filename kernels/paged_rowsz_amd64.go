package kernels

import "unsafe"

// qkRowsZ runs attnQKRowsZ{,F16,BF16}_{hd} (hd 64 or 128) on keys of type kt (KVF32, KVF16 or
// KVBF16) at k.
func qkRowsZ(hd int, kt KVDType, q *float32, k unsafe.Pointer, ldk int, koff *int, n4 int, s *float32, lds, nk int, scale float32) {
	switch {
	case kt == KVF16 && hd == 64:
		attnQKRowsZF16_64(q, (*uint16)(k), ldk, koff, n4, s, lds, nk, scale)
	case kt == KVF16:
		attnQKRowsZF16_128(q, (*uint16)(k), ldk, koff, n4, s, lds, nk, scale)
	case kt == KVBF16 && hd == 64:
		attnQKRowsZBF16_64(q, (*uint16)(k), ldk, koff, n4, s, lds, nk, scale)
	case kt == KVBF16:
		attnQKRowsZBF16_128(q, (*uint16)(k), ldk, koff, n4, s, lds, nk, scale)
	case hd == 64:
		attnQKRowsZ_64(q, (*float32)(k), ldk, koff, n4, s, lds, nk, scale)
	default:
		attnQKRowsZ_128(q, (*float32)(k), ldk, koff, n4, s, lds, nk, scale)
	}
}

// pvRowsZ runs attnPVRowsZ{,F16,BF16}_{nb} (1 <= nb <= 6) on values of type vt at v.
func pvRowsZ(nb int, vt KVDType, out *float32, ooff *int, p *float32, poff *int, v unsafe.Pointer, ldv int, voff *int, nk int) {
	switch vt {
	case KVF16:
		pvRowsZF16[nb](out, ooff, p, poff, (*uint16)(v), ldv, voff, nk)
	case KVBF16:
		pvRowsZBF16[nb](out, ooff, p, poff, (*uint16)(v), ldv, voff, nk)
	default:
		pvRowsZF32[nb](out, ooff, p, poff, (*float32)(v), ldv, voff, nk)
	}
}

// The P·V kernels by block count. (Called through these tables the arguments escape; they
// point into pooled plans and the caches, never the stack.)
var (
	pvRowsZF32 = [7]func(out *float32, ooff *int, p *float32, poff *int, v *float32, ldv int, voff *int, nk int){
		1: attnPVRowsZ_1, 2: attnPVRowsZ_2, 3: attnPVRowsZ_3, 4: attnPVRowsZ_4, 5: attnPVRowsZ_5, 6: attnPVRowsZ_6}
	pvRowsZF16 = [7]func(out *float32, ooff *int, p *float32, poff *int, v *uint16, ldv int, voff *int, nk int){
		1: attnPVRowsZF16_1, 2: attnPVRowsZF16_2, 3: attnPVRowsZF16_3, 4: attnPVRowsZF16_4, 5: attnPVRowsZF16_5, 6: attnPVRowsZF16_6}
	pvRowsZBF16 = [7]func(out *float32, ooff *int, p *float32, poff *int, v *uint16, ldv int, voff *int, nk int){
		1: attnPVRowsZBF16_1, 2: attnPVRowsZBF16_2, 3: attnPVRowsZBF16_3, 4: attnPVRowsZBF16_4, 5: attnPVRowsZBF16_5, 6: attnPVRowsZBF16_6}
)
