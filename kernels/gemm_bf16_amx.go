// This file is GemmBF16's AMX path (Intel's Advanced Matrix Extensions, Sapphire Rapids and
// later): TDPBF16PS multiplies a 16x32 bf16 tile of A by a 32x16 bf16 tile of B into a 16x16
// f32 tile of C in one instruction, 8192 products, where VDPBF16PS does 32. The micro-kernel
// (gemm_bf16_amx_amd64.s) keeps a 32x32 block of C in four tiles and streams 16-pair (32-k)
// chunks of A and B through the other four.
//
// The tiles want A row-major (each row's pairs contiguous, 64 bytes per 16 pairs) rather than
// the pair-major panels of the AVX-512 kernel, and k padded with zero pairs to a multiple of
// 16; B keeps packB16's 32-column pair panels. Blocking and the work split are gemmBF16's, so
// each element of C is summed by one worker in the same order whatever the thread count
// (deterministic). The tile unit adds each pair's two products in its own order, so results
// agree with GemmBF16Ref to f32 rounding, not bit for bit (tested with the same tolerance).
package kernels

import "sync"

const (
	amxMR = 32  // rows of C per micro-tile (two tiles)
	amxNR = 32  // columns (two tiles)
	amxMC = 128 // rows of the A block (a multiple of amxMR)
)

// amxConfig is the LDTILECFG block: palette 1, tiles 0-7 each 16 rows of 64 bytes.
var amxConfig = func() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t := 0; t < 8; t++ {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return &c
}()

// bf16KernelAMX is the AMX entry of the micro-kernel table; gemmBF16 sends its blocks to
// gemmBF16BlockAMX instead of gemmBF16Block (fn is unused).
var bf16KernelAMX = bf16Kernel{name: "amx-bf16-32x32", mr: amxMR, nr: amxNR, amx: true}

// amxBuf is one worker's packing scratch for the AMX path.
type amxBuf struct {
	a    [amxMC * bf16KCP]uint32
	b    [bf16KCP * trainNC]uint32
	tmp  [bf16KCP * (trainMC + 32)]uint32
	tile [amxMR * amxNR]float32
}

var amxBufs = sync.Pool{New: func() any { return new(amxBuf) }}

// gemmBF16BlockAMX computes rows [i0, i1) x columns [j0, j1) of C (m x n) with the AMX kernel.
func gemmBF16BlockAMX(m, n, k int, a, b bop, c []float32, ldc int, acc bool, i0, i1, j0, j1 int) {
	buf := amxBufs.Get().(*amxBuf)
	defer amxBufs.Put(buf)
	for jc := j0; jc < j1; jc += trainNC {
		nc := min(trainNC, j1-jc)
		for pc := 0; pc < k; pc += 2 * bf16KCP {
			kc := min(2*bf16KCP, k-pc)
			kp := ((kc+1)/2 + 15) &^ 15
			packB16(buf.b[:], buf.tmp[:], b, k, n, amxNR, pc, kc, jc, nc, kp)
			flag := 0
			if acc || pc > 0 {
				flag = 1
			}
			for ic := i0; ic < i1; ic += amxMC {
				mc := min(amxMC, i1-ic)
				packAAMX(buf, a, m, k, ic, mc, pc, kc, kp)
				full := mc - mc%amxMR
				for jr := 0; jr < nc; jr += amxNR {
					nr := min(amxNR, nc-jr)
					bp := &buf.b[jr*kp]
					if nr == amxNR && full > 0 {
						gemmBF16AMX(&amxConfig[0], kp, &buf.a[0], bp, &c[ic*ldc+jc+jr], 4*ldc, flag, full/amxMR)
					}
					for ir := 0; ir < mc; ir += amxMR {
						if nr == amxNR && ir < full {
							continue
						}
						mr := min(amxMR, mc-ir)
						gemmBF16AMX(&amxConfig[0], kp, &buf.a[ir*kp], bp, &buf.tile[0], 4*amxNR, 0, 1)
						storeTile(c[(ic+ir)*ldc+jc+jr:], ldc, buf.tile[:], amxNR, mr, nr, flag != 0)
					}
				}
			}
		}
	}
}

// packAAMX packs rows [ic, ic+mc) x k [pc, pc+kc) of op(A) (m x k) row-major as pairs:
// buf.a[r*kp + q] = pair(op(A)[ic+r][pc+2q], ...+1), rows up to the next multiple of 32 and
// pairs up to kp zero.
func packAAMX(buf *amxBuf, a bop, m, k, ic, mc, pc, kc, kp int) {
	kcp := (kc + 1) / 2
	rows := (mc + amxMR - 1) &^ (amxMR - 1)
	done := 0
	switch {
	case bf16Convert && a.h == nil && !a.t && kc%16 == 0:
		for r := 0; r < mc; r++ {
			row := a.f[(ic+r)*a.stride+pc:]
			_ = row[kc-1]
			cvtPairsBF16(&buf.a[r*kp], &row[0], kcp)
		}
		done = mc
	case bf16Convert && a.h == nil && a.t && kc%16 == 0 && mc >= 16:
		// op(A)'s rows are stored columns: interleave two stored rows per pair into tmp
		// [kcp][w], then 8x8 word transposes into the rows.
		w := mc - mc%16
		for q := 0; q < kcp; q++ {
			s0, s1 := a.f[(pc+2*q)*a.stride+ic:], a.f[(pc+2*q+1)*a.stride+ic:]
			_, _ = s0[w-1], s1[w-1]
			cvtInterleaveBF16(&buf.tmp[q*w], &s0[0], &s1[0], w)
		}
		for q := 0; q < kcp; q += 8 {
			_ = buf.a[(w-1)*kp+q+7]
			transpose8(f32p(&buf.a[q]), f32p(&buf.tmp[q*w]), 4*w, 4*kp, w)
		}
		done = w
	}
	for r := done; r < rows; r++ {
		d := buf.a[r*kp : r*kp+kp]
		for q := range d {
			if r >= mc || q >= kcp {
				d[q] = 0
				continue
			}
			kk := pc + 2*q
			d[q] = a.bits(ic+r, kk, m, pc+kc) | a.bits(ic+r, kk+1, m, pc+kc)<<16
		}
	}
	for r := 0; r < done; r++ {
		clear(buf.a[r*kp+kcp : r*kp+kp])
	}
}
