// This file implements causal grouped-query attention with an online ("flash") softmax: keys
// and values are read block by block, each query head keeps a running maximum and a running
// sum of exponentials, and the output is rescaled when the maximum grows. No score vector of
// the full context length is ever stored, and the query heads that share one KV head are
// processed together so each K/V block is loaded once for the whole group.
package kernels

import (
	"math"
	"sync"
)

// AttnBlock is the number of cached positions processed per block (32 KiB of f32 keys at
// head dim 128: the block of keys stays in L1/L2 while every head of the group reads it).
const AttnBlock = 64

// attnMaxGroup is the most query heads processed together on one KV head; larger groups are
// split into sub-groups (which then read the same K/V block from cache again).
const attnMaxGroup = 16

// AttentionGroup computes out_j = softmax(q_j·Kᵀ/sqrt(headDim)) · V for the g query heads q_j
// that share one KV head, over cached positions 0..nPos-1, with an online softmax over blocks
// of AttnBlock positions.
// q and out are [g, headDim] (heads contiguous); k and v start at the KV head's offset inside
// cache rows of stride elements (k[p*stride : p*stride+headDim] is position p's key).
// scratch needs at least AttentionScratch(g) values. g must be at most 16 for the stack-free
// path used by Pool.Attention; any g works here.
func AttentionGroup(out, q, k, v []float32, g, nPos, stride, headDim int, scratch []float32) {
	const B = AttnBlock
	scale := float32(1 / math.Sqrt(float64(headDim)))
	s, mx, sum := startOnlineSoftmax(scratch, out, g, headDim)
	if nPos <= 0 {
		return
	}
	_ = k[(nPos-1)*stride+headDim-1]
	_ = v[(nPos-1)*stride+headDim-1]
	for p0 := 0; p0 < nPos; p0 += B {
		nb := min(B, nPos-p0)
		// Scores: each key row is read once for all g heads.
		fast := attnAsm && !Reference && headDim%8 == 0
		attnScores(s, B, q, headDim, g, k[p0*stride:], stride, nb, headDim, scale)
		onlineSoftmax(s, B, nb, g, headDim, mx, sum, out, fast)
		// Weighted values: each value row is read once for all g heads (the assembly keeps
		// one head's output in registers over the block; the block stays in L1 for the group).
		if fast {
			for j := 0; j < g; j++ {
				attnPV(&out[j*headDim], &s[j*B], &v[p0*stride], stride, headDim, nb)
			}
		} else {
			for i := 0; i < nb; i++ {
				vp := v[(p0+i)*stride : (p0+i)*stride+headDim]
				for j := 0; j < g; j++ {
					Axpy(out[j*headDim:(j+1)*headDim], s[j*B+i], vp)
				}
			}
		}
	}
	for j := 0; j < g; j++ {
		Scale(out[j*headDim:(j+1)*headDim], 1/sum[j])
	}
}

// AttentionScratch is the scratch length AttentionGroup needs for g heads.
func AttentionScratch(g int) int { return g*AttnBlock + 2*g }

// Attention computes causal GQA attention for n query tokens at positions start..start+n-1
// (token i sees cached positions 0..start+i), splitting the work across the pool: by (token,
// KV head, sub-group) for prefill, by (KV head, sub-group) for decode. q and out are
// [n, heads*headDim]; kc and vc are the cache rows [>= start+n, kvHeads*headDim], already
// holding this batch's keys and values. See AttentionRunner for the allocation-free form.
func (p *Pool) Attention(out, q, kc, vc []float32, n, start, heads, kvHeads, headDim int) {
	var r AttentionRunner
	r.Run(p, out, q, kc, vc, n, start, heads, kvHeads, headDim)
}

// AttentionRunner runs Pool.Attention without allocating: keep one per sequence (or per
// goroutine) and reuse it. The zero value is ready; a runner must not be used concurrently.
type AttentionRunner struct {
	a  attnArgs
	fn func(lo, hi int)
}

// Run is Pool.Attention on pool p.
func (r *AttentionRunner) Run(p *Pool, out, q, kc, vc []float32, n, start, heads, kvHeads, headDim int) {
	if r.fn == nil {
		r.fn = r.a.run
	}
	r.a = attnArgs{out: out, q: q, kc: kc, vc: vc, n: n, start: start, heads: heads, kvHeads: kvHeads, headDim: headDim}
	r.a.prepare(p.Workers())
	items := n * kvHeads * r.a.nsub
	// Small decode steps are not worth a fan-out (~1 µs per pool call).
	if p.Workers() == 1 || (n == 1 && (start+1)*heads*headDim < 1<<15) {
		r.a.run(0, items)
	} else {
		p.For(items, 1, r.fn)
	}
	r.a = attnArgs{} // drop references to the caller's buffers
}

const attnScratchLen = attnMaxGroup*AttnBlock + 2*attnMaxGroup

var attnScratch = sync.Pool{New: func() any { return new([attnScratchLen]float32) }}

// attnArgs is one Attention call; run is handed to the pool.
type attnArgs struct {
	out, q, kc, vc                          []float32
	n, start, heads, kvHeads, headDim, nsub int
	sg                                      int // query heads per work item
}

// prepare picks the sub-group size: at most attnMaxGroup heads, and enough items to keep
// every worker busy in decode.
func (a *attnArgs) prepare(workers int) {
	group := a.heads / a.kvHeads
	nsub := 1
	for nsub < group && (group%nsub != 0 || group/nsub > attnMaxGroup || a.n*a.kvHeads*nsub < workers) {
		nsub++
	}
	for group%nsub != 0 {
		nsub++
	}
	a.nsub, a.sg = nsub, group/nsub
}

// run processes work items [lo, hi). Item t covers token row tokenOrder(t / perTok): rows are
// taken alternately from both ends so contiguous item ranges get balanced causal work.
func (a *attnArgs) run(lo, hi int) {
	// Scratch comes from a sync.Pool: the max/exp assembly of the float kernels is not marked
	// noescape, so a stack array would move to the heap on every call.
	bp := attnScratch.Get().(*[attnScratchLen]float32)
	defer attnScratch.Put(bp)
	buf := bp[:]
	perTok := a.kvHeads * a.nsub
	qd, kvd, hd := a.heads*a.headDim, a.kvHeads*a.headDim, a.headDim
	group := a.heads / a.kvHeads
	for it := lo; it < hi; it++ {
		t, r := it/perTok, it%perTok
		i := t / 2
		if t%2 == 1 {
			i = a.n - 1 - t/2
		}
		kv, sub := r/a.nsub, r%a.nsub
		h0 := kv*group + sub*a.sg
		off := kv * hd
		qo := i*qd + h0*hd
		AttentionGroup(a.out[qo:qo+a.sg*hd], a.q[qo:qo+a.sg*hd], a.kc[off:], a.vc[off:],
			a.sg, a.start+i+1, kvd, hd, buf)
	}
}

// expf is a float32 exp accurate to about 2 ulp for the arguments attention produces (x <= 0):
// x = n·ln2 + r with |r| <= ln2/2, exp(r) by a degree-7 Taylor polynomial, times 2^n.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693145751953125
		ln2lo = 1.42860682030941723212e-6
		round = 12582912 // 1.5·2^23: adding it rounds a float32 to an integer
	)
	if x < -87.33 {
		return 0
	}
	if x > 88.72 {
		return float32(math.Inf(1))
	}
	nf := x*log2e + round
	nf -= round
	r := x - nf*ln2hi - nf*ln2lo
	pr := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return pr * math.Float32frombits(uint32(int32(nf)+127)<<23)
}

// startOnlineSoftmax splits scratch into the score block s ([g, AttnBlock]) and the running max
// and sum of g heads, and resets them and the heads' outputs (out is [g, headDim]).
func startOnlineSoftmax(scratch, out []float32, g, headDim int) (s, mx, sum []float32) {
	const B = AttnBlock
	s = scratch[: g*B : g*B]
	mx = scratch[g*B : g*B+g]
	sum = scratch[g*B+g : g*B+2*g]
	for j := 0; j < g; j++ {
		mx[j] = float32(math.Inf(-1))
		sum[j] = 0
		clear(out[j*headDim : (j+1)*headDim])
	}
	return s, mx, sum
}

// onlineSoftmax folds one block of nb scores per head into the running softmax of g heads:
// s holds the scores of head j at s[j*B:j*B+nb] and gets exp(score - max) in place; mx and sum
// are the heads' running max and sum of exponentials; when a head's max grows, its partial
// output out[j*headDim:(j+1)*headDim] and sum are rescaled. With fast set, the AVX2 max and
// exp-sum kernels take the first multiple of 8 scores.
func onlineSoftmax(s []float32, B, nb, g, headDim int, mx, sum, out []float32, fast bool) {
	for j := 0; j < g; j++ {
		sj := s[j*B : j*B+nb]
		n8 := 0
		if fast && useFloatAsm {
			n8 = nb &^ 7
		}
		bm := sj[0]
		if n8 > 0 {
			bm = maxF32(&sj[0], n8)
		}
		for _, x := range sj[n8:] {
			bm = max(bm, x)
		}
		if bm > mx[j] {
			if sum[j] != 0 {
				c := expf(mx[j] - bm)
				sum[j] *= c
				Scale(out[j*headDim:(j+1)*headDim], c)
			}
			mx[j] = bm
		}
		m := mx[j]
		var t float32
		if n8 > 0 { // the float kernels' AVX2 exp(x - m) in place, returning the sum
			t = expSubF32(&sj[0], m, n8)
		}
		for i := n8; i < nb; i++ {
			e := expf(sj[i] - m)
			sj[i] = e
			t += e
		}
		sum[j] += t
	}
}

// attnScores sets s[r*ldS+i] = scale * (q_r · k_i) for nq query rows q_r = q[r*ldq:r*ldq+hd] and
// nk keys k_i = k[i*stride:i*stride+hd], on the float GEMM's micro-kernels when hd is a multiple
// of their lanes (each score summed in the same order whatever nq, nk and the tile it falls in:
// attention results do not depend on how rows and pages are grouped), else with Dot.
func attnScores(s []float32, ldS int, q []float32, ldq, nq int, k []float32, stride, nk, hd int, scale float32) {
	if ts := gemmTiles(); useFloatAsm && !Reference && hd%ts.lanes == 0 {
		for r0 := 0; r0 < nq; r0 += ts.mr {
			mr := min(ts.mr, nq-r0)
			for i0 := 0; i0 < nk; i0 += ts.nr {
				ts.f32[mr][min(ts.nr, nk-i0)](&q[r0*ldq], 4*ldq, &k[i0*stride], 4*stride, hd, &s[r0*ldS+i0], 4*ldS, 0)
			}
		}
		for r := 0; r < nq; r++ {
			Scale(s[r*ldS:r*ldS+nk], scale)
		}
		return
	}
	for r := 0; r < nq; r++ {
		for i := 0; i < nk; i++ {
			s[r*ldS+i] = Dot(q[r*ldq:r*ldq+hd], k[i*stride:i*stride+hd]) * scale
		}
	}
}
