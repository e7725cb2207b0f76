// This file implements MatMulInvariant, the batch-invariant matmul of the serving engine's
// paged forward pass: a row's result is bit-identical whatever m is. The GEMM paths (m >= 2)
// already sum each output independently of m; only m == 1 differs, because it takes the GEMV
// kernels, which sum in another order. Here a single row runs the GEMM paths' own kernels
// instead: the 1x1 quantized tile (which sums a row exactly like the 2x4 and 2x2 tiles; with
// AVX-512 VNNI the 4x1 VNNI tiles, which sum like the 4x4 ones, or for a Q4_0 weight with a
// 16-row pack the 16x1 tile of the pack, which sums like the 16x8 one and like the AMX tile;
// for a Q8_0 weight with an AMX pack the AMX tile itself, the token padded to 16; for Q4_K and
// Q6_K on AMX the AMX path's one-token VNNI dot, which sums like the tile; for Q4_0 on AVX2 the 2x1 and
// 1x1 pair tiles, which sum like the 2x4 one, or the 1x1 quad tile when k/32 is a multiple of
// 4; for Q8_0 on AVX2 the 1x1 packed quad tile when the weight has a pack, else the 1x1 Q8_0
// pair tile) and
// the direct float GEMM with one activation row (an F16 weight with a pack, PrepackF16: the
// broadcast kernels of the packs with one row). TestMatMulInvariant
// checks the agreement for every dtype.
package kernels

import "github.com/llmcloud/llmcloud/tensor"

// MatMulInvariant is MatMul (out = x · wᵀ; w [n, k], x [m, k], out [m, n]) with results per
// row independent of m.
func (p *Pool) MatMulInvariant(out, x []float32, w *tensor.Tensor, m int) error {
	if m != 1 || Reference || len(w.Shape) != 2 {
		return p.MatMul(out, x, w, m)
	}
	n, k := w.Shape[0], w.Shape[1]
	if err := w.Check(); err != nil || len(x) < k || len(out) < n || n == 0 || k == 0 {
		return p.MatMul(out, x, w, m) // let MatMul report the problem
	}
	switch w.Type {
	case tensor.Q8_0, tensor.Q4_0:
		if !quantAsm || k%32 != 0 {
			break
		}
		q4 := w.Type == tensor.Q4_0
		nb := k / 32
		rs := nb * 34
		qi := 0
		if q4 {
			rs, qi = nb*18, 1
		}
		a := getQ8Acts(1, k, q4)
		defer q8ActPool.Put(a)
		a.quantize(p, x, q4)
		if pk := packedAMX(p, w.Data, q4, 1, n, k); pk != nil { // the Q8_0 AMX tile, one token padded to 16
			matmulAMX(p, out, a, pk, q4, 1, n, k)
			return nil
		}
		if q4 {
			if pk := packedI16(p, w.Data, n, k); pk != nil { // the VNNI 16-row tiles, with one token
				matmulI16(p, out, a, pk, 1, n, k)
				return nil
			}
		}
		if quantVNNI && nb%2 == 0 { // the GEMM path's VNNI tiles, with one token
			matmulZ(p, out, a, w.Data, q4, 1, n, k)
			return nil
		}
		if pk := packedQ8(p, w.Data, q4, n, k); pk != nil { // the packed quad tiles, with one token
			matmulPacked(p, out, a, pk, q4, 1, n, k)
			return nil
		}
		if q4 && useX4(nb) { // the cross-interleaved Q4_0 quad tiles, with one token
			matmulQ4X(p, out, a, w.Data, 1, n, k)
			return nil
		}
		if q4 && useQuads4(nb) { // the GEMM path's Q4_0 quad tiles, with one token
			matmulQ4Quads(p, out, a, w.Data, 1, n, k)
			return nil
		}
		if q4 && usePairs() && nb%2 == 0 { // the GEMM path's pair tiles, with one token
			matmulP(p, out, a, w.Data, 1, n, k)
			return nil
		}
		if !q4 && useH8(nb) { // the Q8_0 half-interleaved pair tiles, with one token
			matmulQ8H(p, out, a, w.Data, 1, n, k)
			return nil
		}
		if !q4 && usePairs8() && nb%2 == 0 { // the Q8_0 pair tiles, with one token
			matmulP8(p, out, a, w.Data, 1, n, k)
			return nil
		}
		var cp *int32
		if q4 {
			cp = &a.corr[0]
		}
		tile := quantTiles[qi][1][1]
		p.For(n, 64, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				tile(&w.Data[r*rs], rs, &a.qs[0], k, &a.d[0], cp, nb, &out[r], n)
			}
		})
		return nil
	case tensor.Q4_K, tensor.Q6_K:
		if !(quantVNNI || kTileA()) || k%256 != 0 {
			break
		}
		a := getQ8KActs(1, k)
		defer q8KActPool.Put(a)
		a.quantize(p, x)
		if amxKOn() {
			matmulAMXK(p, out, a, w.Data, w.Type == tensor.Q6_K, 1, n, k) // the GEMM path's AMX path, one token (its VNNI dot: the tile's bits)
		} else if quantVNNI {
			matmulKZ(p, out, a, w.Data, w.Type == tensor.Q6_K, 1, n, k) // the GEMM path's VNNI kernel, one token
		} else {
			matmulKA(p, out, a, w.Data, w.Type == tensor.Q6_K, 1, n, k) // the GEMM path's AVX2 tiles, one token
		}
		return nil
	case tensor.F32, tensor.F16, tensor.BF16:
		if !useFloatAsm || !littleEndian || (w.Type == tensor.F16 && RoundF16Activations) {
			break
		}
		if w.Type == tensor.F16 && useGemmStream {
			if pk := f16PackOf(p, w); pk != nil { // the GEMM path's broadcast kernels, one row
				j := newF16Job(p, out, w.Data, 1, n, k)
				j.pack = pk
				j.packItems(p, 1, k)
				gemmF16Items(p, []f16Job{j}, x[:k], 1, k)
				return nil
			}
		}
		gemmDirect(p, out[:n], x[:k], w.Type, w.Data, 1, n, k)
		return nil
	}
	if isK(w.Type) && useRowsK() && k%256 == 0 { // AVX2 K-quants without the tiles: the GEMM path's one-row dots
		p.matmulKDots(out, x, w)
		return nil
	}
	// K-quants on the Go kernels (one dot product per row and token on every path) and the
	// reference paths are already invariant; so is anything MatMul does without a GEMV special case.
	return p.MatMul(out, x, w, m)
}
