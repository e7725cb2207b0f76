// This file implements the one-token (decode) quantized matmul over row ranges, so that one
// pool job can cover the rows of several weights that share the token (MatMulShared: q/k/v,
// gate/up), with one barrier instead of one per weight. Each weight type runs its fastest
// decode kernel: the VNNI row kernels, the AVX2 sequential row kernels, the 1x1 tile for Q4_0
// with an odd block count, and for the K-quants the VNNI one-row one-token tile (1.4x the
// AVX2 dot for Q4_K and 1.5x for Q6_K in L1 per CPU-second) or the AVX2 dots.
package kernels

import (
	"sync"

	"github.com/llmcloud/llmcloud/tensor"
)

// gemvSeg is one weight of a one-token matmul: out[r] = x · w[r] for rows r in [0, n).
type gemvSeg struct {
	out  []float32
	w    []byte
	dt   tensor.DType
	n, k int
	// The segment's own token (MatMulEach: a different input per weight); nil: gemvSegs'
	// shared one.
	a8 *q8Acts
	ak *q8KActs
	// zc: the zero codes of a Q4_0Z weight run on its Q4_0 rows (dt Q4_0) by the VNNI kernel
	// with the zeros folded in (matmul_zero_fused.go); nil for every other weight.
	zc []int8
}

// acts returns the token layouts of s: its own, else the shared a8, ak.
func (s *gemvSeg) acts(a8 *q8Acts, ak *q8KActs) (*q8Acts, *q8KActs) {
	if s.a8 != nil || s.ak != nil {
		return s.a8, s.ak
	}
	return a8, ak
}

// prep computes the token layouts seg's kernel reads (a8 or ak quantized already); it runs
// before the rows are split, since the layouts are shared by the workers.
func (s *gemvSeg) prep(p *Pool, a8 *q8Acts, ak *q8KActs) {
	nb := s.k / 32
	switch {
	case s.zc != nil:
		a8.prepQuadZero()
	case s.dt == tensor.Q8_0 && gemvVNNI() && nb%2 == 0:
		a8.prepZ(p, false)
	case s.dt == tensor.Q4_0 && gemvVNNI() && nb%4 == 0:
		a8.prepQuad()
	case s.dt == tensor.Q4_0 && nb%2 == 0:
		a8.pairLayout()
	case s.dt == tensor.Q8_0 && nb%2 == 0:
		a8.pairScales()
	case isK(s.dt) && quantVNNI && !useRowsK():
		ak.recs(p)
	}
}

// rows computes rows [lo, hi) of seg.
func (s *gemvSeg) rows(a8 *q8Acts, ak *q8KActs, lo, hi int) {
	if lo >= hi {
		return
	}
	w, k, out := s.w, s.k, s.out
	nb := k / 32
	if s.zc != nil {
		ps := ptrsPool.Get().(*streamPtrs)
		s.zeroRows(ps, a8, lo, hi)
		ptrsPool.Put(ps)
		return
	}
	if isK(s.dt) && useRowsK() { // AVX2: four rows folded (quant_krows.go)
		rs, _ := s.dt.RowBytes(k)
		ps := ptrsPool.Get().(*streamPtrs)
		rowsK(ps, s.dt == tensor.Q6_K, w, rs, lo, hi, ak, k/256, out)
		ptrsPool.Put(ps)
		return
	}
	switch s.dt {
	case tensor.Q8_0:
		rs := nb * 34
		switch {
		case gemvVNNI() && nb%2 == 0 && useRows4:
			// Groups of four rows, then the rest one by one with the same per-row math.
			n4 := (hi - lo) &^ 3
			if n4 > 0 {
				rows4Z(&w[lo*rs], rs, n4, &a8.qs[0], &a8.dz[0], &a8.fz[0], nb/2, &out[lo])
			}
			if lo+n4 < hi {
				rows4ZTail(&w[(lo+n4)*rs], rs, hi-lo-n4, &a8.qs[0], &a8.dz[0], &a8.fz[0], nb/2, &out[lo+n4])
			}
		case gemvVNNI() && nb%2 == 0:
			rowsZ[0](&w[lo*rs], rs, hi-lo, &a8.qs[0], &a8.dz[0], &a8.cz[0], nb/2, &out[lo])
		case nb%2 == 0:
			ps := ptrsPool.Get().(*streamPtrs)
			rowsA(ps, tensor.Q8_0, w, rs, lo, hi, a8, nb/2, out)
			ptrsPool.Put(ps)
		default:
			q8Rows(&w[lo*rs], rs, hi-lo, &a8.qs[0], &a8.d[0], nb, &out[lo])
		}
	case tensor.Q4_0:
		rs := nb * 18
		switch {
		case gemvVNNI() && nb%4 == 0:
			rowsZ[1](&w[lo*rs], rs, hi-lo, &a8.x4[0], &a8.d4[0], &a8.c4[0], nb/4, &out[lo])
		case nb%2 == 0:
			ps := ptrsPool.Get().(*streamPtrs)
			rowsA(ps, tensor.Q4_0, w, rs, lo, hi, a8, nb/2, out)
			ptrsPool.Put(ps)
		default:
			for r := lo; r < hi; r++ {
				quantTiles[1][1][1](&w[r*rs], rs, &a8.qs[0], k, &a8.d[0], &a8.corr[0], nb, &out[r], 1)
			}
		}
	case tensor.Q4_K:
		rs := k / 256 * 144
		for r := lo; r < hi; r++ {
			if quantVNNI {
				tilesKZ[0][1](&w[r*rs], &ak.rec[0], k/256*kRec, k/256, &out[r], 1)
			} else {
				out[r] = dotQ4K(&w[r*rs], &ak.qs[0], &ak.d[0], &ak.bsum8[0], k/256)
			}
		}
	case tensor.Q6_K:
		rs := k / 256 * 210
		for r := lo; r < hi; r++ {
			if quantVNNI {
				tilesKZ[1][1](&w[r*rs], &ak.rec[0], k/256*kRec, k/256, &out[r], 1)
			} else {
				out[r] = dotQ6K(&w[r*rs], &ak.qs[0], &ak.d[0], &ak.bsums[0], k/256)
			}
		}
	}
}

// gemvSegPool holds the segment lists of gemvSegs' callers (a list escapes into the pool's
// job, so a literal would be a heap allocation per matmul).
var gemvSegPool = sync.Pool{New: func() any { return new([]gemvSeg) }}

// getGemvSegs returns an empty segment list; putGemvSegs gives it back.
func getGemvSegs() *[]gemvSeg { return gemvSegPool.Get().(*[]gemvSeg) }

func putGemvSegs(sp *[]gemvSeg) {
	clear(*sp) // drop the references to outputs and weights
	*sp = (*sp)[:0]
	gemvSegPool.Put(sp)
}

// gemvSteal selects forStealing for the decode rows (else forDynamic).
var gemvSteal = true

// gemvSegs computes every segment for one token on p: Q8_0 rows as four streams per worker
// (gemvStreams), other types in chunks of 64 rows, as one job: each worker takes the chunks of its own contiguous share front to back, then
// steals from the back of the others' (forStealing; gemvSteal = false: forDynamic's shared
// counter, for benchmarks).
func gemvSegs(p *Pool, segs []gemvSeg, a8 *q8Acts, ak *q8KActs) {
	total, own := 0, false
	for i := range segs {
		s := &segs[i]
		own = own || s.a8 != nil || s.ak != nil
		s8, sk := s.acts(a8, ak)
		s.prep(p, s8, sk)
		total += s.n
	}
	if !own && streamsEligible(segs) {
		gemvStreams(p, segs, a8, ak, total)
		return
	}
	if own && eachStreamsEligible(segs) {
		gemvEachStreams(p, segs)
		return
	}
	const rowsPer = 64
	split := forStealing
	if !gemvSteal {
		split = forDynamic
	}
	split(p, (total+rowsPer-1)/rowsPer, func(c int) {
		lo, hi := c*rowsPer, min(c*rowsPer+rowsPer, total)
		start := 0
		for i := range segs {
			s := &segs[i]
			s8, sk := s.acts(a8, ak)
			s.rows(s8, sk, max(lo, start)-start, min(hi, start+s.n)-start)
			start += s.n
		}
	})
}
