// This file runs Q4_K and Q6_K prefill GEMMs on AMX-INT8 tiles, as quant_amx.go does for Q8_0
// and Q4_0: one TDPBSSD multiplies 16 tokens x one sub-block (32 values for Q4_K, 16 for Q6_K)
// by the same sub-block of 16 weight rows, and AVX-512 scales and accumulates the 16x16 int32
// sums while the tile unit multiplies the next sub-blocks (the same four-deep pipeline).
//
// Weights: no pack. A work item unpacks each 16-row group it runs from the stored GGUF rows
// once (unpackK4AMX / unpackK6AMX), for every token tile of its chunk: per sub-block a record
// of the B tile (row q, dword lane r: values 4q..4q+3 of the sub-block of weight row r; Q4_K
// nibbles as int8 0..15, Q6_K values q-32) followed by the 16 rows' scales as float32 (Q4_K
// d·sc and dmin·m, Q6_K d·sc). The unpack transposes 16 rows four dwords at a time
// (VPUNPCK*DQ within 128-bit lanes, the rows loaded lane by lane) and decodes the 6-bit
// scales of 16 rows with shifts and masks.
//
// Tokens: the A tile is loaded from the Q8_K values (q8KActs.qs, a row per token); the
// tokens' super-block scales dx and, for Q4_K, Σx of each sub-block (the mins term) are laid
// out per 16 tokens and sub-block (prepAMXK). Per token and sub-block the epilogue is
//
//	acc = fma(float(sumi), d·sc, acc)            (both types)
//	acc = fma(-Σx, dmin·m, acc)                  (Q4_K)
//
// in sub-block order, and at each super-block's end total = fma(acc, dx, total), acc = 0. A
// tile's last 8 or fewer tokens run VNNI dots that compute the same exact sums and float steps
// (dotsKZ): the same bits for less time. So a token's result does not depend on m: every
// m >= 2 runs this path (graph/exec's Invariant mode relies on that for MatMulShared) and
// MatMulInvariant runs it for one token too. Results differ from the VNNI kernels' within
// rounding (another sum order).
package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
)

const (
	amxK4Rec = 640 // Q4_K bytes per group and sub-block of 32: B tile (8x64), 16 d·sc, 16 dmin·m
	amxK6Rec = 320 // Q6_K bytes per group and sub-block of 16: B tile (4x64), 16 d·sc
)

// amxK6Config is the LDTILECFG block of the Q6_K tile: C tiles 16x64 bytes, A tiles 16 rows
// of 16 bytes (one sub-block of 16 tokens' values), B tiles 4 rows of 64 bytes.
var amxK6Config = func() *[64]byte {
	c := *amxQ8Config
	for t := 4; t < 6; t++ {
		c[16+2*t] = 16
	}
	for t := 6; t < 8; t++ {
		c[48+t] = 4
	}
	return &c
}()

// amxK6Config4 is amxK6Config with A and C tiles of 4 rows.
var amxK6Config4 = func() *[64]byte {
	c := *amxK6Config
	for t := 0; t < 6; t++ {
		c[48+t] = 4
	}
	return &c
}()

// unpackKFunc unpacks nb super-blocks of 16 stored rows (row r at src + r·rs) into the
// group's sub-block records at dst.
type unpackKFunc func(dst, src *byte, rs int, nb int)

// The Q4_K (index 0) and Q6_K (1) tiles on 16 and 4 tokens and unpackers: assembly where
// AMX-INT8 is usable, else nil (the path is off).
var (
	tileKAMX   [2]tileAMXFunc
	tileKAMX4  [2]tileAMXFunc
	unpackKAMX [2]unpackKFunc
)

// kDotFunc computes the AMX tile's results for a few tokens without tiles (k4DotZ1..4): token
// p's values at a + p·astride, its dt entries at dt + p, its 16 results at out + p·ostride.
type kDotFunc func(w *byte, a *int8, astride int, dt *float32, ns int, out *float32, ostride int)

// dotsKZ[q6][P] is the Q4_K (Q6_K) kernel for P tokens (1..4) on AVX-512 VNNI, the same bits as the AMX
// tile (the exact int32 sums of each sub-block, then the tile's float steps in its order): a
// tile's last amxKDots or fewer tokens run on it, since a tile step costs about as much with
// 4 tokens as with 16. nil without AMX-INT8 (the path is off).
var dotsKZ [2][5]kDotFunc

// amxKDots is the most tokens of a tile that run on dotsKZ.
var amxKDots = 8

// amxKOn reports whether Q4_K / Q6_K GEMMs with k a multiple of 256 run on the AMX tiles.
func amxKOn() bool { return amxOn() && tileKAMX[0] != nil }

// amxKShape returns per type the values per sub-block, the record size and the configurations.
func amxKShape(q6 bool) (sub, rec int, cfg, cfg4 *[64]byte) {
	if q6 {
		return 16, amxK6Rec, amxK6Config, amxK6Config4
	}
	return 32, amxK4Rec, amxQ8Config, amxQ8Config4
}

// Bits of q8KActs.amx.
const (
	readyAMXK4 = 1 << iota // dt4
	readyAMXK6             // dt6
	readyAMXKX             // xa
)

// prepAMXK fills a's token layout for the Q4_K (Q6_K if q6) AMX tiles: per 16 tokens and
// sub-block the tokens' dx (and for Q4_K then their Σx of the sub-block), zero past m; and
// when m is not a multiple of 16 the last tile's values with zero tokens after them.
func (a *q8KActs) prepAMXK(q6 bool) {
	m, k, nb := a.m, a.k, a.nb
	nt := (m + amxToks - 1) / amxToks
	if q6 && a.amx&readyAMXK6 == 0 {
		a.amx |= readyAMXK6
		ns := k / 16
		a.dt6 = grow(a.dt6, nt*ns*2*amxToks)
		clear(a.dt6)
		for t := 0; t < m; t++ {
			dt := a.dt6[t/amxToks*ns*2*amxToks+t%amxToks:]
			for s := 0; s < ns; s++ {
				dt[2*amxToks*s] = a.d[t*nb+s/16]
				// 32·Σx as int32 bits: what the VNNI dots (dotsKZ) subtract for their values + 32
				dt[2*amxToks*s+amxToks] = math.Float32frombits(uint32(32 * int32(a.bsums[t*nb*16+s])))
			}
		}
	}
	if !q6 && a.amx&readyAMXK4 == 0 {
		a.amx |= readyAMXK4
		ns := k / 32
		a.dt4 = grow(a.dt4, nt*ns*2*amxToks)
		clear(a.dt4)
		for t := 0; t < m; t++ {
			dt := a.dt4[t/amxToks*ns*2*amxToks+t%amxToks:]
			for s := 0; s < ns; s++ {
				dx := a.d[t*nb+s/8]
				dt[2*amxToks*s] = dx
				dt[2*amxToks*s+amxToks] = float32(a.bsum8[t*nb*8+s])
			}
		}
	}
	if m%amxToks != 0 && a.amx&readyAMXKX == 0 {
		a.amx |= readyAMXKX
		a.xa = grow(a.xa, amxToks*k)
		t0 := m - m%amxToks
		copy(a.xa, a.qs[t0*k:m*k])
		clear(a.xa[(m-t0)*k:])
	}
}

// amxKScratch is one work item's scratch: the C tiles' sums and the tokens' totals, a partial tile's results, the
// group unpacked, and a last partial group's rows padded with zero rows.
type amxKScratch struct {
	buf  [3 * 256]int32
	tail [amxToks * i16Rows]float32
	grp  []byte
	pad  []byte
}

var amxKScratchPool = sync.Pool{New: func() any { return new(amxKScratch) }}

// amxKItems prepares a's layout and returns the work items of out = x · wᵀ for the Q4_K (Q6_K
// if q6) weight w ([n, k], k a multiple of 256) on the AMX tiles: items of amxGroups 16-row
// groups x one token chunk, taken dynamically; each unpacks its groups once.
func amxKItems(out []float32, a *q8KActs, w []byte, q6 bool, m, n, k int) (int, func(c int)) {
	a.prepAMXK(q6)
	sub, rec, cfg, cfg4 := amxKShape(q6)
	qi := btoi(q6)
	tile, tile4, unpack := tileKAMX[qi], tileKAMX4[qi], unpackKAMX[qi]
	nb := k / 256
	rs := nb * 144
	dt := a.dt4
	if q6 {
		rs, dt = nb*210, a.dt6
	}
	ns := k / sub
	dts := ns * amxToks * 2 // dt floats per token tile: dx and Σx (Q6_K: 32·Σx) per sub-block
	ng := (n + i16Rows - 1) / i16Rows
	nit := (ng + amxGroups - 1) / amxGroups
	tc := amxChunk(k)
	full := m - m%amxToks
	return nit * ((m + tc - 1) / tc), func(c int) {
		t0, g0 := c/nit*tc, c%nit*amxGroups
		t1, g1 := min(t0+tc, m), min(g0+amxGroups, ng)
		s := amxKScratchPool.Get().(*amxKScratch)
		defer amxKScratchPool.Put(s)
		s.grp = grow(s.grp, ns*rec)
		for g := g0; g < g1; g++ {
			r := g * i16Rows
			src := w[r*rs:]
			if r+i16Rows > n { // the last group: rows past n are zero
				s.pad = grow(s.pad, i16Rows*rs)
				copy(s.pad, w[r*rs:n*rs])
				clear(s.pad[(n-r)*rs:])
				src = s.pad
			}
			unpack(&s.grp[0], &src[0], rs, nb)
			t := t0
			if nt := (min(t1, full) - t0) / amxToks; nt > 0 && r+i16Rows <= n { // whole tiles at once
				tile(&cfg[0], &s.grp[0], &a.qs[t*k], k, &dt[t/amxToks*dts], ns, &s.buf[0], &out[t*n+r], n, nt)
				t += nt * amxToks
			}
			for ; t < t1; t += amxToks {
				x := &a.qs[t*k]
				if t >= full {
					x = &a.xa[0]
				}
				T := min(amxToks, t1-t)
				if T <= amxKDots && dotsKZ[qi][1] != nil { // without tiles, 4 tokens a call
					for i := 0; i < T; i += 4 {
						P := min(4, T-i)
						dotsKZ[qi][P](&s.grp[0], &a.qs[(t+i)*k], k, &dt[t/amxToks*dts+i], ns, &s.tail[i*i16Rows], i16Rows)
					}
				} else if T <= 4 {
					tile4(&cfg4[0], &s.grp[0], x, k, &dt[t/amxToks*dts], ns, &s.buf[0], &s.tail[0], i16Rows, 1)
				} else {
					tile(&cfg[0], &s.grp[0], x, k, &dt[t/amxToks*dts], ns, &s.buf[0], &s.tail[0], i16Rows, 1)
				}
				for i := 0; i < T; i++ {
					copy(out[(t+i)*n+r:(t+i)*n+n], s.tail[i*i16Rows:(i+1)*i16Rows])
				}
			}
		}
	}
}

// matmulAMXK runs out = x · wᵀ for a Q4_K (Q6_K if q6) weight on the AMX tiles.
func matmulAMXK(p *Pool, out []float32, a *q8KActs, w []byte, q6 bool, m, n, k int) {
	items, fn := amxKItems(out, a, w, q6, m, n, k)
	runItems(p, m, items, fn)
}

// unpackK4AMXRef is the Go twin of unpackK4AMX: nb Q4_K super-blocks of 16 rows (row r at
// src + r·rs) into 8·nb records of amxK4Rec bytes.
func unpackK4AMXRef(dst, src *byte, rs int, nb int) {
	d, s := unsafe.Slice(dst, 8*nb*amxK4Rec), unsafe.Slice(src, 15*rs+nb*144)
	le := binary.LittleEndian
	for b := 0; b < nb; b++ {
		for r := 0; r < i16Rows; r++ {
			blk := s[r*rs+144*b : r*rs+144*b+144]
			dd, dmin := f16(blk), f16(blk[2:])
			sc, mn := scalesQ4K(blk[4:16])
			for j := 0; j < 8; j++ {
				o := d[(8*b+j)*amxK4Rec : (8*b+j+1)*amxK4Rec]
				le.PutUint32(o[512+4*r:], math.Float32bits(dd*float32(sc[j])))
				le.PutUint32(o[576+4*r:], math.Float32bits(dmin*float32(mn[j])))
				q := blk[16+32*(j/2) : 48+32*(j/2)]
				for i := 0; i < 32; i++ {
					v := q[i] & 15
					if j%2 == 1 {
						v = q[i] >> 4
					}
					o[64*(i/4)+4*r+i%4] = v
				}
			}
		}
	}
}

// unpackK6AMXRef is the Go twin of unpackK6AMX: nb Q6_K super-blocks of 16 rows into 16·nb
// records of amxK6Rec bytes.
func unpackK6AMXRef(dst, src *byte, rs int, nb int) {
	d, s := unsafe.Slice(dst, 16*nb*amxK6Rec), unsafe.Slice(src, 15*rs+nb*210)
	le := binary.LittleEndian
	for b := 0; b < nb; b++ {
		for r := 0; r < i16Rows; r++ {
			blk := s[r*rs+210*b : r*rs+210*b+210]
			dd := f16(blk[208:])
			for e := 0; e < 256; e++ {
				sb, i := e/16, e%16
				o := d[(16*b+sb)*amxK6Rec : (16*b+sb+1)*amxK6Rec]
				if i == 0 {
					le.PutUint32(o[256+4*r:], math.Float32bits(dd*float32(int8(blk[192+sb]))))
				}
				h, g, j := e/128, (e%128)/32, e%32
				ql := blk[64*h+32*(g%2)+j]
				if g >= 2 {
					ql >>= 4
				}
				q := int8(ql&0xf|(blk[128+32*h+j]>>(2*g))&3<<4) - 32
				o[64*(i/4)+4*r+i%4] = byte(q)
			}
		}
	}
}

// refTileK4AMX and refTileK6AMX (16 tokens) and refTileK4AMX4, refTileK6AMX4 (4 tokens) are
// the Go twins of the tiles: ns sub-blocks of the group's records at w.
func refTileK4AMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, ns int, buf *int32, out *float32, ostride int, tiles int) {
	refTileKAMXT(false, amxToks, w, a, astride, dt, ns, out, ostride, tiles)
}

func refTileK4AMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, ns int, buf *int32, out *float32, ostride int, tiles int) {
	refTileKAMXT(false, 4, w, a, astride, dt, ns, out, ostride, tiles)
}

func refTileK6AMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, ns int, buf *int32, out *float32, ostride int, tiles int) {
	refTileKAMXT(true, amxToks, w, a, astride, dt, ns, out, ostride, tiles)
}

func refTileK6AMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, ns int, buf *int32, out *float32, ostride int, tiles int) {
	refTileKAMXT(true, 4, w, a, astride, dt, ns, out, ostride, tiles)
}

// refTileKAMXT computes tokens 16i+t, t < T, of the twins.
func refTileKAMXT(q6 bool, T int, w *byte, a *int8, astride int, dt *float32, ns int, out *float32, ostride int, tiles int) {
	sub, rec, _, _ := amxKShape(q6)
	dr := 2 * amxToks // dt floats per sub-block
	last := (tiles-1)*amxToks + T - 1
	ws := unsafe.Slice(w, ns*rec)
	xs := unsafe.Slice(a, last*astride+ns*sub)
	ds := unsafe.Slice(dt, (tiles*ns-1)*dr+dr-amxToks+T) // tile i's token t < T
	os := unsafe.Slice(out, last*ostride+i16Rows)
	le := binary.LittleEndian
	for t := 0; t <= last; t++ {
		if t%amxToks >= T {
			continue
		}
		for r := 0; r < i16Rows; r++ {
			var acc, tot float32
			for s := 0; s < ns; s++ {
				o, x := ws[s*rec:(s+1)*rec], xs[t*astride+sub*s:]
				var sumi int32
				for i := 0; i < sub; i++ {
					sumi += int32(int8(o[64*(i/4)+4*r+i%4])) * int32(x[i])
				}
				d := ds[(t/amxToks*ns+s)*dr:]
				dsc := math.Float32frombits(le.Uint32(o[sub*16+4*r:]))
				acc = fma32(float32(sumi), dsc, acc)
				if !q6 {
					dmm := math.Float32frombits(le.Uint32(o[576+4*r:]))
					acc = fma32(-d[amxToks+t%amxToks], dmm, acc)
				}
				if (s+1)%(256/sub) == 0 { // the super-block's end
					tot, acc = fma32(acc, d[t%amxToks], tot), 0
				}
			}
			os[t*ostride+r] = tot
		}
	}
}

// refDotKZ returns the Go twin of k4DotZP (k6DotZP if q6): the twin tile on P tokens.
func refDotKZ(q6 bool, P int) kDotFunc {
	return func(w *byte, a *int8, astride int, dt *float32, ns int, out *float32, ostride int) {
		refTileKAMXT(q6, P, w, a, astride, dt, ns, out, ostride, 1)
	}
}
