// This file implements BF16Weights, the bf16 copies of f32 master weights a pool in bf16 mode
// reads (gemm_bf16.go), and the pool's bf16 mode switch.
package kernels

// BF16Weights holds bf16 copies of f32 weights (the masters): a pool in bf16 mode reads a
// registered weight's copy when a Gemm operand starts at it. Refresh must follow every change
// of the masters (the trainer calls it after each optimizer step and after a restore).
type BF16Weights struct {
	byPtr map[*float32]*bf16Copy
	list  []*bf16Copy
}

type bf16Copy struct {
	src []float32
	h   []uint16
}

// NewBF16Weights registers ws (each a whole weight matrix) and fills their copies.
func NewBF16Weights(p *Pool, ws ...[]float32) *BF16Weights {
	s := &BF16Weights{byPtr: map[*float32]*bf16Copy{}}
	for _, w := range ws {
		if len(w) == 0 || s.byPtr[&w[0]] != nil {
			continue
		}
		c := &bf16Copy{src: w, h: make([]uint16, len(w))}
		s.byPtr[&w[0]] = c
		s.list = append(s.list, c)
	}
	s.Refresh(p)
	return s
}

// Refresh rounds every master into its copy.
func (s *BF16Weights) Refresh(p *Pool) {
	if s == nil {
		return
	}
	for _, c := range s.list {
		n := len(c.src)
		p.For((n+chunkBF16-1)/chunkBF16, 1, func(lo, hi int) {
			a, b := lo*chunkBF16, min(hi*chunkBF16, n)
			for i := a; i < b; i++ {
				c.h[i] = BF16Round(c.src[i])
			}
		})
	}
}

const chunkBF16 = 1 << 14

// Bytes is the memory of the copies.
func (s *BF16Weights) Bytes() int64 {
	var n int64
	for _, c := range s.list {
		n += 2 * int64(len(c.h))
	}
	return n
}

// find is the copy of the weight d starts at (nil: none, or d reaches past it).
func (s *BF16Weights) find(d []float32) []uint16 {
	if s == nil || len(d) == 0 {
		return nil
	}
	c := s.byPtr[&d[0]]
	if c == nil || len(d) > len(c.src) {
		return nil
	}
	return c.h
}

// SetBF16 puts the pool in bf16 mode (w non-nil; w may hold no weights) or back in f32 (nil):
// in bf16 mode Gemm runs GemmBF16 when this CPU has a bf16 kernel in assembly (BF16Fast).
func (p *Pool) SetBF16(w *BF16Weights) { p.bf16 = w }

// BF16 is the pool's bf16 weights (nil: f32 mode).
func (p *Pool) BF16() *BF16Weights { return p.bf16 }
