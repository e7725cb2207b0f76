// This file packs tokenized examples into rows of T positions and serves them as batches.
package sft

import (
	"fmt"
	"math/rand/v2"
)

// Seq is one tokenized example: ids and the loss mask (Renderer.Encode).
type Seq struct {
	IDs  []int32
	Mask []bool
}

// Packed is examples laid out in rows of T positions: X the inputs, Y the targets (the next
// token where the mask is set, -1 elsewhere), Starts each position's document start
// (trainexec.SetDocStarts). Padding at a row's end is a document of its own with no loss.
type Packed struct {
	T             int
	X, Y          []int32 // rows*T
	Starts        []int32
	Rows          int
	Examples      int // examples packed
	Truncated     int // examples longer than T+1 tokens, cut to T+1
	Tokens        int // positions holding example tokens (not padding)
	Trained       int // positions with a target (the loss mask)
	PadID         int32
	DocsPerRowMax int
}

// Pack lays seqs out, in order, into rows of T positions: an example of n tokens takes n-1
// positions (inputs ids[:n-1], targets ids[1:]); with pack false each example has a row of
// its own, with pack true a row takes the next examples while they fit (first fit in order).
// Examples of more than T+1 tokens are cut to T+1; an example of fewer than 2 tokens is skipped.
func Pack(seqs []Seq, T int, pack bool, pad int32) (*Packed, error) {
	if T < 2 {
		return nil, fmt.Errorf("sft: sequence length %d", T)
	}
	p := &Packed{T: T, PadID: pad}
	used, docs := T, 0 // positions used in the current row (T: no row open)
	for _, s := range seqs {
		n := len(s.IDs)
		if len(s.Mask) != n {
			return nil, fmt.Errorf("sft: example of %d ids with a mask of %d", n, len(s.Mask))
		}
		if n < 2 {
			continue
		}
		if n > T+1 {
			n = T + 1
			p.Truncated++
		}
		if !pack || used+n-1 > T {
			p.closeRow(used)
			p.X = append(p.X, make([]int32, T)...)
			p.Y = append(p.Y, make([]int32, T)...)
			p.Starts = append(p.Starts, make([]int32, T)...)
			p.Rows++
			used, docs = 0, 0
		}
		base := (p.Rows - 1) * T
		for j := 0; j < n-1; j++ {
			p.X[base+used+j] = s.IDs[j]
			p.Y[base+used+j] = -1
			if s.Mask[j+1] {
				p.Y[base+used+j] = s.IDs[j+1]
				p.Trained++
			}
			p.Starts[base+used+j] = int32(used)
		}
		used += n - 1
		p.Tokens += n - 1
		p.Examples++
		docs++
		p.DocsPerRowMax = max(p.DocsPerRowMax, docs)
	}
	p.closeRow(used)
	if p.Rows == 0 {
		return nil, fmt.Errorf("sft: no example of at least 2 tokens")
	}
	return p, nil
}

// closeRow pads the open row from position used on (a no-op when no row is open).
func (p *Packed) closeRow(used int) {
	if p.Rows == 0 || used >= p.T {
		return
	}
	base := (p.Rows - 1) * p.T
	for j := used; j < p.T; j++ {
		p.X[base+j], p.Y[base+j], p.Starts[base+j] = p.PadID, -1, int32(used)
	}
}

// Batches walks a Packed's rows B at a time (train.Batches and train.DocBatches): in a fixed
// order shuffled once per epoch from seed (seed 0: file order), wrapping around.
type Batches struct {
	p      *Packed
	B      int
	seed   uint64
	order  []int
	pos    int64 // rows served
	starts []int32
}

// NewBatches serves p in batches of B rows.
func NewBatches(p *Packed, B int, seed uint64) (*Batches, error) {
	if B < 1 {
		return nil, fmt.Errorf("sft: batch %d", B)
	}
	b := &Batches{p: p, B: B, seed: seed, starts: make([]int32, B*p.T)}
	b.order = b.epochOrder(0)
	return b, nil
}

func (b *Batches) epochOrder(epoch int) []int {
	o := make([]int, b.p.Rows)
	for i := range o {
		o[i] = i
	}
	if b.seed != 0 {
		r := rand.New(rand.NewPCG(b.seed, uint64(epoch)))
		r.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
	}
	return o
}

// Next fills x, y (B*T) with the next B rows and keeps their document starts for DocStarts.
func (b *Batches) Next(x, y []int32) {
	T := b.p.T
	for i := range b.B {
		e := int(b.pos / int64(b.p.Rows))
		if b.pos%int64(b.p.Rows) == 0 {
			b.order = b.epochOrder(e)
		}
		r := b.order[b.pos%int64(b.p.Rows)]
		copy(x[i*T:(i+1)*T], b.p.X[r*T:(r+1)*T])
		copy(y[i*T:(i+1)*T], b.p.Y[r*T:(r+1)*T])
		copy(b.starts[i*T:(i+1)*T], b.p.Starts[r*T:(r+1)*T])
		b.pos++
	}
}

// DocStarts are the document starts of the rows of the last Next.
func (b *Batches) DocStarts() []int32 { return b.starts }

// Position is the number of rows served.
func (b *Batches) Position() int64 { return b.pos }

// SetPosition returns to a position Position gave.
func (b *Batches) SetPosition(pos int64) error {
	if pos < 0 {
		return fmt.Errorf("sft: position %d", pos)
	}
	b.pos = pos
	b.order = b.epochOrder(int(pos / int64(b.p.Rows)))
	return nil
}

// Epoch is the number of complete passes over the rows.
func (b *Batches) Epoch() int { return int(b.pos / int64(b.p.Rows)) }

// Rows is the number of packed rows.
func (b *Batches) Rows() int { return b.p.Rows }
