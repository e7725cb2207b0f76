// This file implements Loader: batches for next-token training. The split is cut into windows
// of B*T+1 tokens starting every B*T tokens (window w covers [w*B*T, w*B*T+B*T], so consecutive
// windows share one token, the target of the last position); x is a window's first B*T tokens
// and y the same shifted by one. With world ranks, rank r takes windows r, r+world, r+2*world,
// ...; every rank gets the same number of windows per epoch (the remainder is dropped), so
// data-parallel ranks wrap together. Order is fixed: no shuffling, no randomness.

package data

import "fmt"

// Loader yields batches of one rank. It is not safe for concurrent use.
type Loader struct {
	d             *Dataset
	b, t          int
	rank, world   int
	windowsPerRnk int64
	pos           int64 // windows this rank has taken since epoch 0
	buf           []int32
}

// NewLoader returns a loader of B sequences of T tokens for rank of world ranks.
func NewLoader(d *Dataset, B, T, rank, world int) (*Loader, error) {
	if B <= 0 || T <= 0 {
		return nil, fmt.Errorf("data: batch %dx%d: B and T must be positive", B, T)
	}
	if world <= 0 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("data: rank %d of world %d: want 0 <= rank < world", rank, world)
	}
	bt := int64(B) * int64(T)
	if d.Len() < 1 {
		return nil, fmt.Errorf("data: split %q is empty", d.split)
	}
	total := (d.Len() - 1) / bt
	perRank := total / int64(world)
	if perRank == 0 {
		return nil, fmt.Errorf("data: split %q has %d tokens; %d ranks of %dx%d batches need at least %d",
			d.split, d.Len(), world, B, T, int64(world)*bt+1)
	}
	return &Loader{d: d, b: B, t: T, rank: rank, world: world, windowsPerRnk: perRank,
		buf: make([]int32, bt+1)}, nil
}

// Next fills x and y (each [B*T], row-major [B][T]) with the next window: x its first B*T
// tokens, y the tokens one position later. It panics if len(x) or len(y) is not B*T.
func (l *Loader) Next(x, y []int32) {
	bt := l.b * l.t
	if len(x) != bt || len(y) != bt {
		panic(fmt.Sprintf("data: Loader.Next: len(x)=%d len(y)=%d, want B*T=%d", len(x), len(y), bt))
	}
	w := (l.pos%l.windowsPerRnk)*int64(l.world) + int64(l.rank)
	if err := l.d.Read(l.buf, w*int64(bt)); err != nil {
		panic(err) // unreachable: NewLoader sized the windows inside the split
	}
	copy(x, l.buf[:bt])
	copy(y, l.buf[1:])
	l.pos++
}

// Position is the number of batches this loader has yielded; SetPosition(Position()) on a new
// loader with the same dataset, B, T, rank and world resumes exactly here (epoch included).
func (l *Loader) Position() int64 { return l.pos }

// SetPosition resumes at pos, as returned by Position. (It is not called Seek: go vet reserves
// that name for io.Seeker's signature.)
func (l *Loader) SetPosition(pos int64) error {
	if pos < 0 {
		return fmt.Errorf("data: seek to negative position %d", pos)
	}
	l.pos = pos
	return nil
}

// Epoch counts completed passes over this rank's windows.
func (l *Loader) Epoch() int { return int(l.pos / l.windowsPerRnk) }

// Windows is the number of batches per epoch for this rank (a full validation pass).
func (l *Loader) Windows() int64 { return l.windowsPerRnk }
