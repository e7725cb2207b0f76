// This file implements the fast path of Gemm, blocked as BLIS does (k blocks of trainKC, A
// blocks of trainMC rows for L2, B blocks of trainNC columns), with the AVX2/FMA micro-kernel
// of gemm_train_amd64.s computing each 6x16 tile of C. The kernel takes strides, so a
// row-major A is read in place; op(B) is packed into 16-column panels (16 KiB each, in L1
// while used) and a transposed A into 6-row panels. Edge tiles run the same kernel on
// zero-padded panels into a scratch tile.
package kernels

//go:generate sh -c "cd internal/asmgen/train && go run . -out ../../../gemm_train_amd64.s -stubs ../../../gemm_train_stubs_amd64.go -pkg kernels"

import "sync"

const (
	trainMR = 6    // rows of a micro-tile
	trainNR = 16   // columns of a micro-tile
	trainKC = 256  // k block: a B panel is trainKC x 16 f32 = 16 KiB
	trainMC = 144  // rows of the A block: 144 x 256 f32 = 144 KiB (L2)
	trainNC = 3072 // columns of the B block: 256 x 3072 f32 = 3 MiB (L3)
)

// gemmMinFlops is the size below which Gemm stays on the plain-Go path (packing would cost
// more than it saves).
const gemmMinFlops = 1 << 12

// gemmFast runs Gemm on the packed AVX2 path and reports whether it did. The work is split
// across workers along n in whole 16-column panels or along m in 6-row panels: splitting n
// makes every worker pack all of op(A) (m x k values), splitting m all of op(B) (k x n), so the
// split goes along the longer of m and n while it still gives every worker a share. Either way
// each element of C is summed by one worker in the same order, so the result does not depend
// on the split.
func gemmFast(p *Pool, m, n, k int, a, b Mat, c []float32, ldc int, acc bool) bool {
	if !useTrainAsm || m*n*k < gemmMinFlops {
		return false
	}
	nPanels, mPanels := (n+trainNR-1)/trainNR, (m+trainMR-1)/trainMR
	splitM := mPanels >= p.workers && (m > n || nPanels < p.workers)
	if !splitM && nPanels < p.workers {
		splitM = mPanels > nPanels
	}
	// At least ~2 MFLOP per worker.
	if splitM {
		minChunk := max(1, (1<<20)/(n*k*trainMR))
		p.For(mPanels, minChunk, func(lo, hi int) {
			gemmBlock(m, k, a, b, c, ldc, acc, lo*trainMR, min(hi*trainMR, m), 0, n)
		})
	} else {
		minChunk := max(1, (1<<20)/(m*k*trainNR))
		p.For(nPanels, minChunk, func(lo, hi int) {
			gemmBlock(m, k, a, b, c, ldc, acc, 0, m, lo*trainNR, min(hi*trainNR, n))
		})
	}
	return true
}

// gemmBuf is one worker's packing scratch.
type gemmBuf struct {
	a    [trainMC * trainKC]float32 // op(A) block in 6-row panels (transposed A and edges)
	b    [trainKC * trainNC]float32 // op(B) block in 16-column panels
	tile [trainMR * trainNR]float32 // an edge tile of C
}

var gemmBufs = sync.Pool{New: func() any { return new(gemmBuf) }}

// gemmBlock computes rows [i0, i1) x columns [j0, j1) of C. op(B) is always packed (a copy of
// 16 floats per row when B is stored row-major, a gather when transposed): read in place, a
// power-of-two row stride would map a whole panel onto one L1 set. A row-major A is read in
// place (6 sequential streams); a transposed A is packed (6 floats per k step), as is a last
// partial row panel.
func gemmBlock(m, k int, a, b Mat, c []float32, ldc int, acc bool, i0, i1, j0, j1 int) {
	buf := gemmBufs.Get().(*gemmBuf)
	defer gemmBufs.Put(buf)
	for jc := j0; jc < j1; jc += trainNC {
		nc := min(trainNC, j1-jc)
		for pc := 0; pc < k; pc += trainKC {
			kc := min(trainKC, k-pc)
			packB(buf.b[:], b, pc, kc, jc, nc)
			flag := 0
			if acc || pc > 0 {
				flag = 1
			}
			for ic := i0; ic < i1; ic += trainMC {
				mc := min(trainMC, i1-ic)
				full := mc - mc%trainMR // rows in whole panels
				if a.T {
					packA(buf.a[:], a, ic, mc, pc, kc)
				} else if full < mc {
					packA(buf.a[full*kc:], a, ic+full, mc-full, pc, kc)
				}
				for jr := 0; jr < nc; jr += trainNR {
					nr := min(trainNR, nc-jr)
					bp := &buf.b[jr*kc]
					for ir := 0; ir < mc; ir += trainMR {
						ap, ars, aps := &buf.a[ir*kc], 4, 4*trainMR
						if !a.T && ir < full {
							ap, ars, aps = &a.Data[(ic+ir)*a.Stride+pc], 4*a.Stride, 4
						}
						off := (ic+ir)*ldc + jc + jr
						if ir < full && nr == trainNR {
							gemmTrain6x16(kc, ap, ars, aps, bp, 4*trainNR, &c[off], 4*ldc, flag)
							continue
						}
						gemmTrain6x16(kc, ap, ars, aps, bp, 4*trainNR, &buf.tile[0], 4*trainNR, 0)
						mr := min(trainMR, mc-ir)
						for r := 0; r < mr; r++ {
							dst, src := c[off+r*ldc:off+r*ldc+nr], buf.tile[r*trainNR:r*trainNR+nr]
							if flag == 0 {
								copy(dst, src)
								continue
							}
							for j := range dst {
								dst[j] += src[j]
							}
						}
					}
				}
			}
		}
	}
}

// packA packs rows [ic, ic+mc) x columns [pc, pc+kc) of op(A) into 6-row panels: panel q holds
// dst[q*6*kc + p*6 + r] = op(A)[ic+6q+r][pc+p], rows past mc zero.
func packA(dst []float32, a Mat, ic, mc, pc, kc int) {
	for ir := 0; ir < mc; ir += trainMR {
		mr := min(trainMR, mc-ir)
		d := dst[ir*kc : (ir+trainMR)*kc]
		if mr < trainMR {
			clear(d)
			for r := 0; r < mr; r++ {
				for p := 0; p < kc; p++ {
					d[p*trainMR+r] = a.at(ic+ir+r, pc+p)
				}
			}
			continue
		}
		// Only a transposed A comes here whole: 6 consecutive values per k step.
		for p := 0; p < kc; p++ {
			*(*[trainMR]float32)(d[p*trainMR:]) = [trainMR]float32(a.Data[(pc+p)*a.Stride+ic+ir:])
		}
	}
}

// packB packs rows [pc, pc+kc) x columns [jc, jc+nc) of op(B) into 16-column panels: panel q
// holds dst[q*16*kc + p*16 + j] = op(B)[pc+p][jc+16q+j], columns past nc zero.
func packB(dst []float32, b Mat, pc, kc, jc, nc int) {
	for jr := 0; jr < nc; jr += trainNR {
		nr := min(trainNR, nc-jr)
		d := dst[jr*kc : (jr+trainNR)*kc]
		switch {
		case nr < trainNR:
			clear(d)
			for p := 0; p < kc; p++ {
				for j := 0; j < nr; j++ {
					d[p*trainNR+j] = b.at(pc+p, jc+jr+j)
				}
			}
		case !b.T:
			for p := 0; p < kc; p++ {
				*(*[trainNR]float32)(d[p*trainNR:]) = [trainNR]float32(b.Data[(pc+p)*b.Stride+jc+jr:])
			}
		default:
			// Eight rows of the stored matrix at a time: each becomes 8 lanes of every p.
			s := b.Stride
			for h := 0; h < trainNR; h += 8 {
				o := (jc+jr+h)*s + pc
				r0, r1, r2, r3 := b.Data[o:o+kc], b.Data[o+s:o+s+kc], b.Data[o+2*s:o+2*s+kc], b.Data[o+3*s:o+3*s+kc]
				r4, r5, r6, r7 := b.Data[o+4*s:o+4*s+kc], b.Data[o+5*s:o+5*s+kc], b.Data[o+6*s:o+6*s+kc], b.Data[o+7*s:o+7*s+kc]
				for p := range r0 {
					*(*[8]float32)(d[p*trainNR+h:]) = [8]float32{r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]}
				}
			}
		}
	}
}
