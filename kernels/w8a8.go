// This file multiplies f32 activations by W8A8 weights (tensor.W8A8: int8 values, one float32
// scale per output row), SmoothQuant / vLLM style: the activations are quantized per token
// (one scale per row of x, q = round(x·127/max|x|)), the products are summed in int32 over the
// whole k, and each output gets one float epilogue: out = float(Σ w·q) · dw · dx. No per-block
// float work, unlike Q8_0 (blocks of 32, a convert and an FMA per block).
//
// Layouts:
//   - The weight is stored packed (tensor/w8a8_pack.go, made at conversion; the tiles read
//     it in place): rows in groups of 16; per group nq = ceil(k/4) registers of 64 bytes
//     (register j holds bytes 4j..4j+3 of row r in its dword lane r), then the 16 row scales
//     (float32). The bytes are w+128 (unsigned, VPDPBUSD's first operand); the AVX2 tiles
//     flip them back to w on load (one VPXOR) for the |w| / sign(w) trick of VPMADDUBSW.
//   - The activations (w8Acts) are int8 in panels: with m >= w8Wide, panels of 8 tokens
//     where quad j of the 8 tokens is 32 consecutive bytes (token t at 4t), so a tile
//     broadcasts each token's four values from a constant offset; with fewer tokens, one
//     token per panel (its values in order). Per token: the scale dx and the int32
//     correction 128·Σq (VPDPBUSD's unsigned weights sum Σ(w+128)·q).
//
// Tiles (w8Tile, assembly in w8a8_amd64.s, Go twins below): g1p8 = 16 rows x 8 tokens,
// g2p8 = 32 rows x 8 tokens, g1p1 = 16 rows x 1 token. Integer sums are exact, and the
// epilogue is the same float32 ops in the same order everywhere, so every path (VNNI, AVX2,
// Go) gives bit-identical results, independent of m and of the work split.
package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

const (
	w8Rows  = 16 // rows per group
	w8Panel = 8  // tokens per wide panel
	w8Wide  = 8  // m from which panels are wide
)

// w8Tile computes rows of G groups x the tokens of one panel: w at group 0 (group g at
// w + g·gbytes), xs at the panel, nq quads, dx / cx the tokens' scales and corrections,
// out[t*ostride + r].
type w8Tile func(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int)

// w8Kernels is one set of tiles and the pack format they read.
type w8Kernels struct {
	name             string
	unsigned         bool // sums are Σ(w+128)·q, corrected by cx (else the tile flips to w)
	g1p8, g2p8, g1p1 w8Tile
}

// w8Go is the plain-Go set; w8Active is the one MatMul uses (w8a8_amd64.go installs the
// assembly).
var (
	w8Go     = w8Kernels{name: "go", unsigned: true, g1p8: refW8Tile(1, 8, true), g2p8: refW8Tile(2, 8, true), g1p1: refW8Tile(1, 1, true)}
	w8Active = w8Go
)

// w8Pack is a W8A8 weight [n, k] in its stored layout (tensor/w8a8_pack.go): the tiles read
// the tensor's data in place, nothing is copied.
type w8Pack struct {
	n, k, nq, ng, gbytes int
	data                 []byte
}

// w8PackOf returns the view of w's packed data.
func w8PackOf(w *tensor.Tensor) *w8Pack {
	n, k := w.Shape[0], w.Shape[1]
	return &w8Pack{n: n, k: k, nq: (k + 3) / 4, ng: (n + w8Rows - 1) / w8Rows, gbytes: tensor.W8A8GroupBytes(k), data: w.Data}
}

// w8Acts are activations quantized per token, in panels.
type w8Acts struct {
	m, k, nq, width, npan int
	amx                   bool // one-token panels, rows padded to whole AMX tiles (w8a8_amx.go)
	x                     []byte
	dx                    []float32
	cx                    []int32
}

var w8ActPool sync.Pool

// quantizeW8 quantizes x ([m, k]) per token into panels (width 8 when m >= w8Wide, else 1);
// with amx, one-token panels with the rows padded to a multiple of 16 tokens (zero values, zero
// scales), the AMX tiles' A layout.
func quantizeW8(p *Pool, x []float32, m, k int, amx bool) *w8Acts {
	a, _ := w8ActPool.Get().(*w8Acts)
	if a == nil {
		a = new(w8Acts)
	}
	a.m, a.k, a.nq, a.amx = m, k, (k+3)/4, amx
	a.width = 1
	if m >= w8Wide && !amx {
		a.width = w8Panel
	}
	a.npan = (m + a.width - 1) / a.width
	mp := a.npan * a.width
	if amx {
		mp = (m + amxToks - 1) / amxToks * amxToks
	}
	a.x = grow(a.x, mp*a.nq*4)
	a.dx, a.cx = grow(a.dx, mp), grow(a.cx, mp)
	if amx {
		clear(a.x[m*a.nq*4:])
		clear(a.dx[m:])
		clear(a.cx[m:])
	} else if mp > m { // padded tokens: zero values, zero scale
		clear(a.x[(a.npan-1)*a.width*a.nq*4:])
		clear(a.dx[m:])
		clear(a.cx[m:])
	}
	p.For(m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			a.quantizeToken(t, x[t*k:(t+1)*k])
		}
	})
	return a
}

// quantizeToken writes token t's values into its panel slots, its scale and correction.
// The first multiple of 16 values go through w8AmaxFast / w8QuantFast where installed
// (AVX-512: same float32 product and round-half-even, so the same bytes).
func (a *w8Acts) quantizeToken(t int, x []float32) {
	k16 := 0
	if w8QuantFast != nil {
		k16 = a.k &^ 15
	}
	var amax float32
	if k16 > 0 {
		amax = w8AmaxFast(x[:k16])
	}
	for _, v := range x[k16:] {
		amax = max(amax, abs32(v))
	}
	pan, lane := t/a.width, t%a.width
	base := a.x[pan*a.width*a.nq*4:]
	st := 4 * a.width // bytes between quads of one token
	var sum int32
	if amax == 0 {
		for j := 0; j < a.nq; j++ {
			*(*uint32)(unsafe.Pointer(&base[j*st+4*lane])) = 0
		}
		a.dx[t], a.cx[t] = 0, 0
		return
	}
	id := 127 / amax
	if k16 > 0 {
		sum = w8QuantFast(x[:k16], id, &base[4*lane], st)
	}
	var quad [4]int8
	for j := k16 / 4; j < a.nq; j++ {
		quad = [4]int8{}
		for b := 0; b < 4 && 4*j+b < a.k; b++ {
			q := int8(math.RoundToEven(float64(x[4*j+b] * id)))
			quad[b] = q
			sum += int32(q)
		}
		*(*[4]int8)(unsafe.Pointer(&base[j*st+4*lane])) = quad
	}
	a.dx[t], a.cx[t] = amax/127, 128*sum
}

// w8AmaxFast (max |x|, len(x) a multiple of 16) and w8QuantFast (quantize len(x) values, a
// multiple of 16, quad i to dst + i·st, returning Σq) are the assembly quantizer, or nil.
var (
	w8AmaxFast  func(x []float32) float32
	w8QuantFast func(x []float32, id float32, dst *byte, st int) int32
)

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// matmulW8A8 computes out = x · wᵀ for a W8A8 weight w [n, k] with the active kernels.
func matmulW8A8(p *Pool, out, x []float32, w *tensor.Tensor, m, n, k int) {
	if k == 0 {
		clear(out[:m*n])
		return
	}
	kn := w8Active
	pk := w8PackOf(w)
	a := quantizeW8(p, x, m, k, w8AMXOn(m, k))
	defer w8ActPool.Put(a)
	w8Run(p, kn, out, a, pk)
}

// matmulW8A8Shared computes outs[i] = x · ws[i]ᵀ for the W8A8 weights ws[i], i in idx, all
// with the same k, quantizing x once.
func matmulW8A8Shared(p *Pool, outs [][]float32, x []float32, ws []*tensor.Tensor, idx []int, m int) error {
	k := ws[idx[0]].Shape[1]
	for _, i := range idx {
		w := ws[i]
		n := w.Shape[0]
		if err := w.Check(); err != nil {
			return fmt.Errorf("matmul: %w", err)
		}
		if w.Shape[1] != k {
			return fmt.Errorf("matmul: weight %s has k=%d, the other weights sharing x %d", w.Name, w.Shape[1], k)
		}
		if m < 0 || len(x) < m*k || len(outs[i]) < m*n {
			return fmt.Errorf("matmul: weight %s [%d %d]: x has %d values and out %d, want %d and %d for m=%d",
				w.Name, n, k, len(x), len(outs[i]), m*k, m*n, m)
		}
	}
	if m == 0 {
		return nil
	}
	if k == 0 {
		for _, i := range idx {
			clear(outs[i][:m*ws[i].Shape[0]])
		}
		return nil
	}
	kn := w8Active
	a := quantizeW8(p, x, m, k, w8AMXOn(m, k))
	defer w8ActPool.Put(a)
	for _, i := range idx {
		if ws[i].Shape[0] > 0 {
			w8Run(p, kn, outs[i], a, w8PackOf(ws[i]))
		}
	}
	return nil
}

// w8Chunk is the number of panels per work item: their values (~256 KiB) stay in L2 while
// the item's groups walk over them.
func w8Chunk(nq int) int { return max(1, (256<<10)/(nq*4*w8Panel)) }

// w8Run runs the tiles over every group and panel: items of 2 groups x a chunk of panels,
// taken dynamically; with fewer than w8Wide tokens, items of 4 groups (each group meeting
// every token while in L1), stolen from the back.
func w8Run(p *Pool, kn w8Kernels, out []float32, a *w8Acts, pk *w8Pack) {
	if a.amx {
		w8RunAMX(p, out, a, pk)
		return
	}
	n, nq, gb := pk.n, pk.nq, pk.gbytes
	pstride := a.width * nq * 4
	if a.width == 1 {
		const gpi = 4
		nit := (pk.ng + gpi - 1) / gpi
		runItems(p, 1, nit, func(c int) {
			g0 := c * gpi
			var tail [w8Rows]float32
			for g := g0; g < min(g0+gpi, pk.ng); g++ {
				r := g * w8Rows
				for t := 0; t < a.m; t++ { // the group's weights stay in L1 across the tokens
					dst, os := &out[t*n+r], n
					if r+w8Rows > n {
						dst = &tail[0]
					}
					kn.g1p1(&pk.data[g*gb], gb, &a.x[t*pstride], nq, &a.dx[t], &a.cx[t], dst, os)
					if r+w8Rows > n {
						copy(out[t*n+r:t*n+n], tail[:])
					}
				}
			}
		})
		return
	}
	const gpi = 2
	nit := (pk.ng + gpi - 1) / gpi
	pc := w8Chunk(nq)
	nch := (a.npan + pc - 1) / pc
	runItems(p, a.m, nit*nch, func(c int) {
		p0, g0 := c/nit*pc, c%nit*gpi
		p1, g1 := min(p0+pc, a.npan), min(g0+gpi, pk.ng)
		var tail [w8Panel * 2 * w8Rows]float32
		for pn := p0; pn < p1; pn++ {
			t0 := pn * w8Panel
			T := min(w8Panel, a.m-t0)
			xs, dx, cx := &a.x[pn*pstride], &a.dx[t0], &a.cx[t0]
			for g := g0; g < g1; {
				G := min(2, g1-g)
				r := g * w8Rows
				tile := kn.g1p8
				if G == 2 {
					tile = kn.g2p8
				}
				if T == w8Panel && r+G*w8Rows <= n {
					tile(&pk.data[g*gb], gb, xs, nq, dx, cx, &out[t0*n+r], n)
				} else {
					tile(&pk.data[g*gb], gb, xs, nq, dx, cx, &tail[0], 2*w8Rows)
					for i := 0; i < T; i++ {
						copy(out[(t0+i)*n+r:(t0+i)*n+min(n, r+G*w8Rows)], tail[i*2*w8Rows:])
					}
				}
				g += G
			}
		}
	})
}

// refW8Tile returns the Go twin of the G-group x T-token tile (T = 8: a wide panel, T = 1:
// a one-token panel). The stored bytes are w+128: with unsigned the sums are Σ(w+128)·q - cx,
// else Σ w·q (the byte flipped back to w, as the AVX2 tiles do); the epilogue is
// out = float32(float32(s)·dw)·dx.
func refW8Tile(G, T int, unsigned bool) w8Tile {
	return func(w *byte, gbytes int, xs *byte, nq int, dx *float32, cx *int32, out *float32, ostride int) {
		ws := unsafe.Slice(w, (G-1)*gbytes+gbytes)
		xv := unsafe.Slice((*int8)(unsafe.Pointer(xs)), nq*4*T)
		dxs, cxs := unsafe.Slice(dx, T), unsafe.Slice(cx, T)
		os := unsafe.Slice(out, (T-1)*ostride+G*w8Rows)
		for g := 0; g < G; g++ {
			gw := ws[g*gbytes : (g+1)*gbytes]
			for t := 0; t < T; t++ {
				for r := 0; r < w8Rows; r++ {
					var s int32
					for j := 0; j < nq; j++ {
						for b := 0; b < 4; b++ {
							wv := int32(int8(gw[64*j+4*r+b] ^ 0x80))
							if unsigned {
								wv = int32(gw[64*j+4*r+b])
							}
							s += wv * int32(xv[j*4*T+4*t+b])
						}
					}
					if unsigned {
						s -= cxs[t]
					}
					dw := math.Float32frombits(binary.LittleEndian.Uint32(gw[nq*64+4*r:]))
					os[t*ostride+g*w8Rows+r] = float32(float32(s)*dw) * dxs[t]
				}
			}
		}
	}
}
