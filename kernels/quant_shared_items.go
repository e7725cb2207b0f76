// This file runs MatMulShared's Q8_0/Q4_0 weights for several tokens as one pool job: each
// weight's GEMM is a list of independent work items (16 rows x one token chunk) that its own
// call would hand out dynamically (forDynamic); here the items of all the weights (q, k and v,
// or gate and up) are handed out from one counter, so the op ends with one barrier instead of
// one per weight, and the workers' last items of one weight overlap the next weight's first.
// Every item computes what it computes in the weight's own call, so the results are the same
// bits.
package kernels

// itemsJob is one weight's work items: n items, item c computed by fn(c).
type itemsJob struct {
	n  int
	fn func(c int)
}

// q8Items returns the work items of matmulQ8Acts(p, out, a, w, q4, m, n, k) (preparing a's
// layout for them), or false when that call does not split its work into dynamic items (one
// token, or the block tiles' static row split). The cases follow matmulQ8Acts's order.
func q8Items(p *Pool, out []float32, a *q8Acts, w []byte, q4 bool, m, n, k int) (itemsJob, bool) {
	nb := k / 32
	var j itemsJob
	switch {
	case m <= 1:
		return j, false
	case packedAMX(p, w, q4, m, n, k) != nil:
		j.n, j.fn = amxItems(out, a, packedAMX(p, w, q4, m, n, k), q4, m, n, k)
	case q4 && packedI16(p, w, n, k) != nil:
		j.n, j.fn = i16Items(p, out, a, packedI16(p, w, n, k), m, n, k)
	case quantVNNI && nb%2 == 0:
		j.n, j.fn = zItems(p, out, a, w, q4, m, n, k)
	case packedQ8(p, w, q4, n, k) != nil:
		j.n, j.fn = packedItems(p, out, a, packedQ8(p, w, q4, n, k), q4, m, n, k)
	case q4 && useX4(nb):
		j.n, j.fn = x4Items(p, out, a, w, m, n, k)
	case q4 && useQuads4(nb):
		j.n, j.fn = q4QuadItems(p, out, a, w, m, n, k)
	case q4 && usePairs() && nb%2 == 0:
		j.n, j.fn = pItems(p, out, a, w, m, n, k)
	case !q4 && useH8(nb):
		j.n, j.fn = h8Items(p, out, a, w, m, n, k)
	case !q4 && usePairs8() && nb%2 == 0:
		j.n, j.fn = p8Items(p, out, a, w, m, n, k)
	default:
		return j, false
	}
	return j, true
}

// matmulQ8Multi runs outs[i] = x · ws[i]ᵀ for the weights ws[i], i in idx (Q8_0 or Q4_0, all
// [n_i, k]), on the activations a, as one dynamic job when the weights are of one type and
// every weight's GEMM is made of items (see the file comment), and weight by weight otherwise.
func matmulQ8Multi(p *Pool, outs [][]float32, a *q8Acts, ws [][]byte, q4s []bool, ns []int, m, k int) {
	jobs := make([]itemsJob, 0, len(ws))
	for i := range ws {
		// One type only: a layout prepared for one type may be rewritten for the other (the
		// VNNI lane scales), which the first type's items must not see.
		if q4s[i] != q4s[0] {
			jobs = nil
			break
		}
		j, ok := q8Items(p, outs[i], a, ws[i], q4s[i], m, ns[i], k)
		if !ok {
			jobs = nil
			break
		}
		jobs = append(jobs, j)
	}
	if len(jobs) < 2 {
		for i := range ws {
			matmulQ8Acts(p, outs[i], a, ws[i], q4s[i], m, ns[i], k)
		}
		return
	}
	total := 0
	for _, j := range jobs {
		total += j.n
	}
	forDynamic(p, total, func(c int) {
		i := 0
		for c >= jobs[i].n {
			c -= jobs[i].n
			i++
		}
		jobs[i].fn(c)
	})
}
