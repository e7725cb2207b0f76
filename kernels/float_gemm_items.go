// This file runs the AVX2 F16 GEMMs (gemmDirectF16 for m <= gemmDirectMaxM, gemmStream for
// larger m) as dynamic work items: each weight's rows are cut into items of a few dozen to
// streamNB rows, and the pool's workers take items from one shared counter, so a worker the OS
// slows down leaves its items to the other instead of holding up the job with a fixed half of
// the rows. Several weights sharing one input (q/k/v, gate/up: MatMulShared) are one job. Each
// worker packs the activations once per job (all k blocks) and reuses them for every item of
// every weight. An item computes its outputs with the same kernel calls in the same k order as
// the static split did, so results are the same bits.
package kernels

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// f16Job is one weight's GEMM out = x · wᵀ (w [n, k] F16 in data) cut into items of rows
// rows (a multiple of 4).
type f16Job struct {
	out  []float32
	data []byte
	n    int
	rows int
	pack *f16Pack // the weight's pack (PrepackF16), or nil
}

// f16ItemRows is the item size for a weight of n rows: about four items per worker, between
// lo and hi rows (multiples of 4).
func f16ItemRows(n, workers, lo, hi int) int {
	r := (n + 4*workers - 1) / (4 * workers)
	r = (r + 3) &^ 3
	return max(lo, min(hi, r))
}

// f16Usable reports whether gemmF16Items handles w for m activation rows.
func f16Usable(w *tensor.Tensor, m int) bool {
	return useFloatAsm && useGemmStream && !RoundF16Activations && littleEndian &&
		w.Type == tensor.F16 && m > 1 && len(w.Data) > 0 && len(w.Shape) == 2 && w.Shape[1] > 0 &&
		(!useAVX512 || f16Packed(w))
}

// newF16Job returns the job of one weight for m activation rows of length k.
func newF16Job(p *Pool, out []float32, data []byte, m, n, k int) f16Job {
	j := f16Job{out: out[:m*n], data: data, n: n}
	if m <= gemmDirectMaxM {
		// At least ~64 KiB of weights and ~1 MFLOP per item (gemmDirectF16's old minimum share).
		minRows := 4 * max(1, (64<<10)/(4*k*2), (1<<20)/(2*4*m*k))
		j.rows = f16ItemRows(n, p.Workers(), min(minRows, 128), 128)
	} else {
		j.rows = f16ItemRows(n, p.Workers(), 32, streamNB)
	}
	return j
}

// gemmF16Items runs the jobs (all on x [m, k]) as one pool job of dynamic items.
func gemmF16Items(p *Pool, jobs []f16Job, x []float32, m, k int) {
	x = x[:m*k]
	total := 0
	for _, j := range jobs {
		total += (j.n + j.rows - 1) / j.rows
	}
	kv := k &^ 7
	mt := (m + 2) / 3 * 3
	var next atomic.Int64
	p.For(min(p.Workers(), total), 1, func(_, _ int) {
		var pk []float32
		var pb *[]float32
		for c := int(next.Add(1) - 1); c < total; c = int(next.Add(1) - 1) {
			i := 0
			for ni := (jobs[0].n + jobs[0].rows - 1) / jobs[0].rows; c >= ni; ni = (jobs[i].n + jobs[i].rows - 1) / jobs[i].rows {
				c -= ni
				i++
			}
			j := &jobs[i]
			if pb == nil && j.pack == nil { // the broadcast kernels read x as it is
				pb = getPacked(mt * kv)
				pk = *pb
				for k0 := 0; k0 < kv; k0 += gemmKC {
					packTiles3(pk[mt*k0:], x, m, k, k0, min(gemmKC, kv-k0))
				}
			}
			r0, r1 := c*j.rows, min((c+1)*j.rows, j.n)
			switch {
			case j.pack != nil:
				bcastRows(j.out, x, j.pack, m, j.n, k, r0, r1)
			case m <= gemmDirectMaxM:
				directF16Rows(j.out, x, pk, j.data, m, j.n, k, r0, r1)
			default:
				streamRows(j.out, x, pk, j.data, m, j.n, k, r0, r1)
			}
		}
		if pb != nil {
			packedBufs.Put(pb)
		}
	})
}

// gemmStream computes out = x · wᵀ (x [m, k], w [n, k] F16 in data, out [m, n]) on the AVX2
// tiles (3 activation rows x 4 weight rows), as dynamic items of weight rows.
func gemmStream(p *Pool, out, x []float32, data []byte, m, n, k int) {
	gemmF16Items(p, []f16Job{newF16Job(p, out, data, m, n, k)}, x, m, k)
}

// gemmDirectF16 is gemmDirect for F16 weights on the AVX2 tiles (2 <= m <= gemmDirectMaxM),
// as dynamic items of weight rows.
func gemmDirectF16(p *Pool, out, x []float32, data []byte, m, n, k int) {
	gemmF16Items(p, []f16Job{newF16Job(p, out, data, m, n, k)}, x, m, k)
}

// matmulF16Multi runs outs[i] = x · ws[i]ᵀ (F16 weights [n_i, k], all f16Usable) as one job.
func matmulF16Multi(p *Pool, outs [][]float32, x []float32, ws []*tensor.Tensor, m, k int) {
	jobs := make([]f16Job, len(ws))
	for i, w := range ws {
		jobs[i] = newF16Job(p, outs[i], w.Data, m, w.Shape[0], k)
		jobs[i].pack = f16PackOf(p, w)
		jobs[i].packItems(p, m, k)
	}
	gemmF16Items(p, jobs, x, m, k)
}

// f16Words views data as n*k F16 values.
func f16Words(data []byte, n, k int) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(&data[0])), n*k)
}

// packedBufs holds the workers' packed activations (up to mt x k f32, a few MiB), apart from
// f32Bufs so that a smaller scratch buffer there does not make every job allocate and fault
// in a new one: buffers too small are dropped, so the pool converges to the largest size.
var packedBufs sync.Pool

func getPacked(n int) *[]float32 {
	if b, ok := packedBufs.Get().(*[]float32); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]float32, n)
	return &b
}
