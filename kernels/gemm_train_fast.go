// This file implements the fast path of Gemm, blocked as BLIS does (k blocks of trainKC, A
// blocks of trainMC rows for L2, B blocks of trainNC columns), with a micro-kernel of
// gemm_train_amd64.s computing each mr x nr tile of C: AVX-512 8x32 where the CPU has it,
// AVX2/FMA 6x16 otherwise. The kernels take strides, so a row-major A is read in place; op(B)
// is packed into nr-column panels (16 or 32 KiB, in L1 while used) and a transposed A into
// mr-row panels. Edge tiles run the same kernel on zero-padded panels into a scratch tile.
package kernels

//go:generate sh -c "cd internal/asmgen/train && go run . -out ../../../gemm_train_amd64.s -stubs ../../../gemm_train_stubs_amd64.go -pkg kernels"

import "sync"

const (
	trainMaxMR = 8    // the largest micro-tile's rows
	trainMaxNR = 32   // and columns
	trainKC    = 256  // the largest k block
	trainMC    = 144  // rows of the A block (a multiple of every mr): 144 KiB (L2)
	trainNC    = 3072 // columns of the B block (a multiple of every nr): 3 MiB (L3)
)

// gemmKernel is one micro-kernel: C[r][j] (+)= Σ_p A(r,p)·B(p,j) for r < mr, j < nr, with
// A(r,p) at a + r*ars + p*aps and B(p, j) at b + p*bps + 4j (bytes).
type gemmKernel struct {
	name   string
	mr, nr int
	kc     int // k block: a B panel of kc x nr f32 stays in L1 (48 KiB on Zen 5) with room to spare
	fn     func(k int, a *float32, ars, aps int, b *float32, bps int, c *float32, ldc int, acc int)
}

var (
	kernelAVX2   = gemmKernel{"avx2-6x16", 6, 16, 256, gemmTrain6x16}
	kernelAVX512 = gemmKernel{"avx512-8x32", 8, 32, 128, gemmTrain8x32}
	// trainKernel is the micro-kernel Gemm uses (tests switch it to cover both).
	trainKernel = func() gemmKernel {
		if useTrainAVX512 {
			return kernelAVX512
		}
		return kernelAVX2
	}()
)

// gemmMinFlops is the size below which Gemm stays on the plain-Go path (packing would cost
// more than it saves).
const gemmMinFlops = 1 << 12

// gemmFast runs Gemm on the packed AVX2 path and reports whether it did. The work is split
// across workers along n in whole nr-column panels or along m in mr-row panels: splitting n
// makes every worker pack all of op(A) (m x k values), splitting m all of op(B) (k x n), so the
// split goes along the longer of m and n while it still gives every worker a share. Either way
// each element of C is summed by one worker in the same order, so the result does not depend
// on the split.
func gemmFast(p *Pool, m, n, k int, a, b Mat, c []float32, ldc int, acc bool) bool {
	if !useTrainAsm || m*n*k < gemmMinFlops {
		return false
	}
	kr := trainKernel
	nPanels, mPanels := (n+kr.nr-1)/kr.nr, (m+kr.mr-1)/kr.mr
	splitM := mPanels >= p.workers && (m > n || nPanels < p.workers)
	if !splitM && nPanels < p.workers {
		splitM = mPanels > nPanels
	}
	// At least ~2 MFLOP per worker.
	if splitM {
		minChunk := max(1, (1<<20)/(n*k*kr.mr))
		p.For(mPanels, minChunk, func(lo, hi int) {
			gemmBlock(kr, k, a, b, c, ldc, acc, lo*kr.mr, min(hi*kr.mr, m), 0, n)
		})
	} else {
		minChunk := max(1, (1<<20)/(m*k*kr.nr))
		p.For(nPanels, minChunk, func(lo, hi int) {
			gemmBlock(kr, k, a, b, c, ldc, acc, 0, m, lo*kr.nr, min(hi*kr.nr, n))
		})
	}
	return true
}

// gemmBuf is one worker's packing scratch.
type gemmBuf struct {
	a    [trainMC * trainKC]float32       // op(A) block in mr-row panels (transposed A and edges)
	b    [trainKC * trainNC]float32       // op(B) block in nr-column panels
	tile [trainMaxMR * trainMaxNR]float32 // an edge tile of C
}

var gemmBufs = sync.Pool{New: func() any { return new(gemmBuf) }}

// gemmBlock computes rows [i0, i1) x columns [j0, j1) of C. op(B) is always packed (a copy of
// 16 floats per row when B is stored row-major, a gather when transposed): read in place, a
// power-of-two row stride would map a whole panel onto one L1 set. A row-major A is read in
// place (6 sequential streams); a transposed A is packed (6 floats per k step), as is a last
// partial row panel.
func gemmBlock(kr gemmKernel, k int, a, b Mat, c []float32, ldc int, acc bool, i0, i1, j0, j1 int) {
	mr0, nr0 := kr.mr, kr.nr
	buf := gemmBufs.Get().(*gemmBuf)
	defer gemmBufs.Put(buf)
	for jc := j0; jc < j1; jc += trainNC {
		nc := min(trainNC, j1-jc)
		for pc := 0; pc < k; pc += kr.kc {
			kc := min(kr.kc, k-pc)
			packB(buf.b[:], b, nr0, pc, kc, jc, nc)
			flag := 0
			if acc || pc > 0 {
				flag = 1
			}
			for ic := i0; ic < i1; ic += trainMC {
				mc := min(trainMC, i1-ic)
				full := mc - mc%mr0 // rows in whole panels
				if a.T {
					packA(buf.a[:], a, mr0, ic, mc, pc, kc)
				} else if full < mc {
					packA(buf.a[full*kc:], a, mr0, ic+full, mc-full, pc, kc)
				}
				for jr := 0; jr < nc; jr += nr0 {
					nr := min(nr0, nc-jr)
					bp := &buf.b[jr*kc]
					for ir := 0; ir < mc; ir += mr0 {
						ap, ars, aps := &buf.a[ir*kc], 4, 4*mr0
						if !a.T && ir < full {
							ap, ars, aps = &a.Data[(ic+ir)*a.Stride+pc], 4*a.Stride, 4
						}
						off := (ic+ir)*ldc + jc + jr
						if ir < full && nr == nr0 {
							kr.fn(kc, ap, ars, aps, bp, 4*nr0, &c[off], 4*ldc, flag)
							continue
						}
						kr.fn(kc, ap, ars, aps, bp, 4*nr0, &buf.tile[0], 4*nr0, 0)
						mr := min(mr0, mc-ir)
						for r := 0; r < mr; r++ {
							dst, src := c[off+r*ldc:off+r*ldc+nr], buf.tile[r*nr0:r*nr0+nr]
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

// packA packs rows [ic, ic+mc) x columns [pc, pc+kc) of op(A) into mr-row panels: panel q
// holds dst[q*mr*kc + p*mr + r] = op(A)[ic+mr*q+r][pc+p], rows past mc zero.
func packA(dst []float32, a Mat, mr0, ic, mc, pc, kc int) {
	for ir := 0; ir < mc; ir += mr0 {
		mr := min(mr0, mc-ir)
		d := dst[ir*kc : (ir+mr0)*kc]
		if mr < mr0 {
			clear(d)
			for r := 0; r < mr; r++ {
				for p := 0; p < kc; p++ {
					d[p*mr0+r] = a.at(ic+ir+r, pc+p)
				}
			}
			continue
		}
		// Only a transposed A comes here whole: mr consecutive values per k step.
		src := a.Data[pc*a.Stride+ic+ir : (pc+kc-1)*a.Stride+ic+ir+mr0]
		copyRows(d, src, a.Stride, mr0, kc)
	}
}

// packB packs rows [pc, pc+kc) x columns [jc, jc+nc) of op(B) into nr-column panels: panel q
// holds dst[q*nr*kc + p*nr + j] = op(B)[pc+p][jc+nr*q+j], columns past nc zero.
func packB(dst []float32, b Mat, nr0, pc, kc, jc, nc int) {
	for jr := 0; jr < nc; jr += nr0 {
		nr := min(nr0, nc-jr)
		d := dst[jr*kc : (jr+nr0)*kc]
		switch {
		case nr < nr0:
			clear(d)
			for p := 0; p < kc; p++ {
				for j := 0; j < nr; j++ {
					d[p*nr0+j] = b.at(pc+p, jc+jr+j)
				}
			}
		case !b.T:
			src := b.Data[pc*b.Stride+jc+jr : (pc+kc-1)*b.Stride+jc+jr+nr0]
			copyRows(d, src, b.Stride, nr0, kc)
		default:
			// Eight rows of the stored matrix at a time: each becomes 8 lanes of every p.
			s := b.Stride
			for h := 0; h < nr0; h += 8 {
				o := (jc+jr+h)*s + pc
				r0, r1, r2, r3 := b.Data[o:o+kc], b.Data[o+s:o+s+kc], b.Data[o+2*s:o+2*s+kc], b.Data[o+3*s:o+3*s+kc]
				r4, r5, r6, r7 := b.Data[o+4*s:o+4*s+kc], b.Data[o+5*s:o+5*s+kc], b.Data[o+6*s:o+6*s+kc], b.Data[o+7*s:o+7*s+kc]
				p0 := 0
				if useTrainAsm && kc >= 8 {
					// 8x8 blocks transposed in registers; bounds: the last row read is r7,
					// the last value written d[(kc8-1)*nr0+h+7].
					p0 = kc &^ 7
					_, _ = r7[p0-1], d[(p0-1)*nr0+h+7]
					transpose8(&d[h], &r0[0], 4*s, 4*nr0, p0)
				}
				for p := p0; p < kc; p++ {
					*(*[8]float32)(d[p*nr0+h:]) = [8]float32{r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]}
				}
			}
		}
	}
}

// copyRows sets dst[p*w+j] = src[p*stride+j] for p < rows, j < w: with vector moves (w = 8,
// 16 or 32) on the assembly path. src must hold (rows-1)*stride + w values, dst rows*w.
func copyRows(dst, src []float32, stride, w, rows int) {
	_, _ = dst[rows*w-1], src[(rows-1)*stride+w-1]
	if useTrainAsm {
		switch w {
		case 8:
			copyRows8(&dst[0], &src[0], 4*stride, rows)
			return
		case 16:
			copyRows16(&dst[0], &src[0], 4*stride, rows)
			return
		case 32:
			copyRows32(&dst[0], &src[0], 4*stride, rows)
			return
		}
	}
	for p := 0; p < rows; p++ {
		copy(dst[p*w:(p+1)*w], src[p*stride:p*stride+w])
	}
}
