// This file runs Q8_0 and Q4_0 prefill GEMMs on AMX-INT8 tiles (Sapphire Rapids and later):
// one TDPBSSD multiplies a tile of 16 tokens x 32 int8 values (one quant block) by a tile of
// 32 values x 16 weight rows into 16x16 int32 sums, 8192 products, where one VPDPBUSD does 64.
// The tile (q8TileAMX, quant_amx_amd64.s) keeps two blocks in flight in two C tiles: while
// the tile unit multiplies block b+1, AVX-512 stores block b's sums and runs the epilogue, per
// token acc = fma(float(sumi)·dx, dw, acc) with the 16 rows' scales dw in one register; the
// 16 tokens' accumulators stay in registers over all blocks.
//
// Weights: a Q8_0 weight gets a pack of 16-row groups (newAMXQ8Pack), per group and block 544
// bytes (the size of the 16 stored blocks): the 16 fp16 scales, then the B tile, 8 rows of 64
// bytes, row j holding in dword lane r values 4j..4j+3 of weight row r. A Q4_0 weight keeps
// its VNNI 16-row pack (quant_vnni_i16.go), whose nibble registers are that B tile's layout at
// half the width: a work item unpacks a group's blocks (nibble - 8, signed) into a scratch
// group once (unpackQ4AMX) and runs every token tile of its chunk on it.
//
// Tokens: the A tile is loaded from the quantized values (q8Acts.qs, a row per token, any
// stride), the tokens' block scales transposed per 16 tokens (q8Acts.dt); a last partial
// tile's tokens are copied into a zero-padded one (q8Acts.xa).
//
// Every output is summed as the VNNI 16-row tile sums it (integer sum per token, row and block
// exact, then the fma above, blocks in order), so a Q4_0 weight gives the same bits on AMX as
// on VNNI and a token's results do not depend on m (MatMulInvariant with one token runs the
// 4-token AMX tile, padded, for Q8_0, and the VNNI 16-row tile for Q4_0).
package kernels

import (
	"encoding/binary"
	"sync"
	"unsafe"
)

const (
	amxBlock = 544 // bytes per 16-row group and block: 16 fp16 scales, the 8x64 B tile
	amxToks  = 16  // tokens per tile
)

// amxQ8Config is the LDTILECFG block of q8TileAMX: palette 1; tmm0-3 16 rows of 64 bytes (C),
// tmm4-5 16 rows of 32 bytes (A), tmm6-7 8 rows of 64 bytes (B).
var amxQ8Config = func() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t, s := range [8][2]int{{64, 16}, {64, 16}, {64, 16}, {64, 16}, {32, 16}, {32, 16}, {64, 8}, {64, 8}} {
		c[16+2*t] = byte(s[0])
		c[48+t] = byte(s[1])
	}
	return &c
}()

// amxQ8Config4 is the LDTILECFG block of q8TileAMX4: A and C tiles of 4 rows.
var amxQ8Config4 = func() *[64]byte {
	c := *amxQ8Config
	for t := 0; t < 6; t++ {
		c[48+t] = 4
	}
	return &c
}()

// tileAMXFunc is one 16-row group x tiles tiles of 16 tokens over nb blocks: the group's
// blocks at w (544 bytes each), token t's block b at a + t·astride + 32b, the scales of tile
// i's tokens of block b at dt[16(i·nb+b):][:16], results at out[t·ostride + r]; buf is 2 KiB of
// scratch. One call loads the tile configuration once for all its tiles.
type tileAMXFunc func(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)

// tileAMX and unpackAMX are the assembly where AMX-INT8 is usable (useAMXInt8), else nil: the
// AMX path is off. tileAMX4 is tileAMX on tiles of 4 tokens (tile i's token t < 4 at
// a + (16i+t)·astride, its results at out[(16i+t)·ostride + r]), for a last tile of at most 4
// tokens: its time, tile unit and epilogue, is about a quarter of the 16-token tile's (Q8_0
// GEMMs with 2 or 3 tokens, a batch-invariant token). useAMX lets tests and benchmarks switch
// the AMX path off to run the VNNI paths.
var (
	tileAMX   tileAMXFunc
	tileAMX4  tileAMXFunc
	unpackAMX func(dst, src *byte, nb int)
	useAMX    = true
)

// amxOn reports whether the quantized prefill GEMMs run on AMX tiles.
func amxOn() bool { return useAMX && tileAMX != nil && quantVNNI }

// amxPackBytes is the size of the AMX pack of a Q8_0 weight [n, k].
func amxPackBytes(n, k int) int {
	return (n + i16Rows - 1) / i16Rows * (k / 32) * amxBlock
}

// newAMXQ8Pack repacks the Q8_0 weight [n, k] stored in data (k a multiple of 32) into 16-row
// groups for q8TileAMX, the groups split over p. Rows past n in the last group are zero.
func newAMXQ8Pack(p *Pool, data []byte, n, k int) []byte {
	nb := k / 32
	ng := (n + i16Rows - 1) / i16Rows
	pk := make([]byte, ng*nb*amxBlock)
	p.For(ng, 4, func(lo, hi int) {
		le := binary.LittleEndian
		for g := lo; g < hi; g++ {
			dst := pk[g*nb*amxBlock : (g+1)*nb*amxBlock]
			for r := 0; r < min(i16Rows, n-g*i16Rows); r++ {
				row := data[(g*i16Rows+r)*nb*34 : (g*i16Rows+r+1)*nb*34]
				for b := 0; b < nb; b++ {
					blk, o := row[34*b:34*b+34], dst[b*amxBlock:(b+1)*amxBlock]
					o[2*r], o[2*r+1] = blk[0], blk[1]
					for j := 0; j < 8; j++ {
						le.PutUint32(o[32+64*j+4*r:], le.Uint32(blk[2+4*j:]))
					}
				}
			}
		}
	})
	return pk
}

// prepAMX fills a's token layout for the AMX tiles: dt, the block scales of every 16 tokens
// transposed ([m/16 rounded up][nb][16], zero past m), and, when m is not a multiple of 16, xa,
// the last tile's tokens' values with zero tokens after them ([16][k]).
func (a *q8Acts) prepAMX() {
	if a.ready&readyAMX != 0 {
		return
	}
	a.ready |= readyAMX
	m, k, nb := a.m, a.k, a.nb
	nt := (m + amxToks - 1) / amxToks
	a.dt = grow(a.dt, nt*nb*amxToks)
	for tt := 0; tt < nt; tt++ {
		dt := a.dt[tt*nb*amxToks : (tt+1)*nb*amxToks]
		for i := 0; i < amxToks; i++ {
			t := tt*amxToks + i
			if t >= m {
				for b := 0; b < nb; b++ {
					dt[b*amxToks+i] = 0
				}
				continue
			}
			d := a.d[t*nb : (t+1)*nb]
			for b, v := range d {
				dt[b*amxToks+i] = v
			}
		}
	}
	if m%amxToks != 0 {
		a.xa = grow(a.xa, amxToks*k)
		t0 := m - m%amxToks
		copy(a.xa, a.qs[t0*k:m*k])
		clear(a.xa[(m-t0)*k:])
	}
}

// amxScratch is one work item's scratch: the C tiles' sums, a partial tile's results and a
// Q4_0 group unpacked.
type amxScratch struct {
	buf  [2 * 256]int32
	tail [amxToks * i16Rows]float32
	grp  []byte
}

var amxScratchPool = sync.Pool{New: func() any { return new(amxScratch) }}

// amxItems prepares a's layout and returns the work items of out = x · wᵀ on the AMX tiles:
// pk is the AMX pack of a Q8_0 weight, or the 16-row VNNI pack of a Q4_0 one (q4); items of
// amxGroups groups x one token chunk, taken dynamically.
func amxItems(out []float32, a *q8Acts, pk []byte, q4 bool, m, n, k int) (int, func(c int)) {
	a.prepAMX()
	nb := k / 32
	ng := (n + i16Rows - 1) / i16Rows
	nit := (ng + amxGroups - 1) / amxGroups
	tc := amxChunk(k)
	gb := nb * amxBlock
	if q4 {
		gb = nb * i16Block
	}
	full := m - m%amxToks
	return nit * ((m + tc - 1) / tc), func(c int) {
		t0, g0 := c/nit*tc, c%nit*amxGroups
		t1, g1 := min(t0+tc, m), min(g0+amxGroups, ng)
		s := amxScratchPool.Get().(*amxScratch)
		defer amxScratchPool.Put(s)
		for g := g0; g < g1; g++ {
			w := pk[g*gb : (g+1)*gb]
			if q4 {
				s.grp = grow(s.grp, nb*amxBlock)
				unpackAMX(&s.grp[0], &w[0], nb)
				w = s.grp
			}
			r := g * i16Rows
			t := t0
			if nt := (min(t1, full) - t0) / amxToks; nt > 0 && r+i16Rows <= n { // whole tiles at once
				tileAMX(&amxQ8Config[0], &w[0], &a.qs[t*k], k, &a.dt[t/amxToks*nb*amxToks], nb, &s.buf[0], &out[t*n+r], n, nt)
				t += nt * amxToks
			}
			for ; t < t1; t += amxToks {
				dt := &a.dt[t/amxToks*nb*amxToks]
				x := &a.qs[t*k]
				if t >= full {
					x = &a.xa[0]
				}
				T := min(amxToks, t1-t)
				if T <= 4 && tileAMX4 != nil {
					tileAMX4(&amxQ8Config4[0], &w[0], x, k, dt, nb, &s.buf[0], &s.tail[0], i16Rows, 1)
				} else {
					tileAMX(&amxQ8Config[0], &w[0], x, k, dt, nb, &s.buf[0], &s.tail[0], i16Rows, 1)
				}
				for i := 0; i < T; i++ {
					copy(out[(t+i)*n+r:(t+i)*n+n], s.tail[i*i16Rows:(i+1)*i16Rows])
				}
			}
		}
	}
}

// amxGroups is the number of 16-row groups per work item.
var amxGroups = 2

// amxChunk is the number of tokens per work item (a multiple of 16), so that their values
// (one byte each) stay in L2 while a worker walks its groups.
func amxChunk(k int) int {
	return max(amxToks, ((1<<20)/k)&^(amxToks-1))
}

// matmulAMX runs out = x · wᵀ on the AMX tiles (pk as for amxItems).
func matmulAMX(p *Pool, out []float32, a *q8Acts, pk []byte, q4 bool, m, n, k int) {
	items, fn := amxItems(out, a, pk, q4, m, n, k)
	runItems(p, m, items, fn)
}

// packedAMX returns the pack the AMX path uses for a Q8_0 (Q4_0 if q4) weight w ([n, k]) with
// m tokens, making it on first use on p, or nil when AMX is off, w is not registered, or (Q4_0)
// m < 16: the VNNI 16-row tile, which sums the same bits, is faster than a padded AMX tile.
func packedAMX(p *Pool, w []byte, q4 bool, m, n, k int) []byte {
	if !amxOn() || k%32 != 0 || len(w) == 0 {
		return nil
	}
	if q4 {
		if m < amxToks {
			return nil
		}
		return packedI16(p, w, n, k)
	}
	v, ok := q8Packs.Load(uintptr(unsafe.Pointer(&w[0])))
	if !ok && packAllQ8 && len(w) >= n*packRowBytes(false, k) {
		v, _ = q8Packs.LoadOrStore(uintptr(unsafe.Pointer(&w[0])), &q8Entry{data: w, n: n, k: k})
	} else if !ok {
		return nil
	}
	e := v.(*q8Entry)
	if e.n != n || e.k != k || e.q4 {
		return nil
	}
	e.onceA.Do(func() { e.packA = newAMXQ8Pack(p, e.data, n, k) })
	return e.packA
}

// refTileAMX is the Go twin of q8TileAMX.
func refTileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int) {
	refTileAMXT(amxToks, w, a, astride, dt, nb, out, ostride, tiles)
}

// refTileAMX4 is the Go twin of q8TileAMX4.
func refTileAMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int) {
	refTileAMXT(4, w, a, astride, dt, nb, out, ostride, tiles)
}

// refTileAMXT computes tokens 16i+t, t < T, of the twins.
func refTileAMXT(T int, w *byte, a *int8, astride int, dt *float32, nb int, out *float32, ostride int, tiles int) {
	last := (tiles-1)*amxToks + T - 1
	ws := unsafe.Slice(w, nb*amxBlock)
	xs := unsafe.Slice(a, last*astride+nb*32)
	ds := unsafe.Slice(dt, tiles*nb*amxToks)
	os := unsafe.Slice(out, last*ostride+i16Rows)
	for t := 0; t <= last; t++ {
		if t%amxToks >= T {
			continue
		}
		for r := 0; r < i16Rows; r++ {
			var acc float32
			for b := 0; b < nb; b++ {
				blk, x := ws[b*amxBlock:], xs[t*astride+32*b:]
				var s int32
				for i := 0; i < 32; i++ {
					s += int32(int8(blk[32+64*(i/4)+4*r+i%4])) * int32(x[i])
				}
				acc = fma32(float32(s)*ds[(t/amxToks*nb+b)*amxToks+t%amxToks], f16(blk[2*r:]), acc)
			}
			os[t*ostride+r] = acc
		}
	}
}

// unpackAMXRef is the Go twin of unpackQ4AMX.
func unpackAMXRef(dst, src *byte, nb int) {
	d, s := unsafe.Slice(dst, nb*amxBlock), unsafe.Slice(src, nb*i16Block)
	for b := 0; b < nb; b++ {
		o, w := d[b*amxBlock:(b+1)*amxBlock], s[b*i16Block:(b+1)*i16Block]
		copy(o[:32], w[:32])
		for i := 0; i < 256; i++ {
			v := w[32+i]
			o[32+i] = byte(int8(v&15) - 8)
			o[32+256+i] = byte(int8(v>>4) - 8)
		}
	}
}
