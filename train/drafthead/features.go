// This file runs the frozen target over one window of tokens and derives what the heads
// learn from: the hidden rows and, per head, the label of every row.
package drafthead

import (
	"github.com/llmcloud/llmcloud/model"
)

// features is one window's target outputs, reused from window to window.
type features struct {
	m       *model.Model
	c       *model.Cache
	T, K    int
	kind    string // "target" or "data": which labels are labels
	seq     []int  // the window and the token after it [T+1]
	logits  []float32
	hidden  []float32 // [T, Dim]
	greedy  []int32   // the target's top-1 after row i (its guess of seq[i+1])
	labels  [][]int32 // per head: the training labels (target's or data's)
	byData  [][]int32 // per head: row i's data label seq[i+j+2] (−1 past the window)
	byModel [][]int32 // per head: the target's top-1 at row i+j+1 (−1 past the window)
	prev    [][]int32 // per head: the token before row i's label, seq[i+j+1] (token input)
}

func newFeatures(m *model.Model, T, K int, kind string) *features {
	f := &features{m: m, c: m.NewCache(T), T: T, K: K, kind: kind, seq: make([]int, T+1),
		greedy: make([]int32, T)}
	f.c.KeepHidden(true)
	for range K {
		f.byData = append(f.byData, make([]int32, T))
		f.byModel = append(f.byModel, make([]int32, T))
		f.prev = append(f.prev, make([]int32, T))
	}
	f.labels = f.byModel
	if kind == "data" {
		f.labels = f.byData
	}
	return f
}

// run processes the window x (T tokens) followed by next.
func (f *features) run(x []int32, next int32) error {
	for i, t := range x {
		f.seq[i] = int(t)
	}
	f.seq[f.T] = int(next)
	logits, err := f.m.ForwardTo(f.logits, f.c, f.seq[:f.T], 0, true)
	if err != nil {
		return err
	}
	f.logits = logits
	f.hidden = append(f.hidden[:0], f.c.Hidden()...)
	V := f.m.Config.Vocab
	for i := range f.T {
		row := logits[i*V : (i+1)*V]
		best := 0
		for v, l := range row {
			if l > row[best] {
				best = v
			}
		}
		f.greedy[i] = int32(best)
	}
	for j := range f.K {
		for i := range f.T {
			f.byData[j][i], f.byModel[j][i], f.prev[j][i] = -1, -1, -1
			if i+j+2 <= f.T {
				f.byData[j][i] = int32(f.seq[i+j+2])
				f.byModel[j][i] = f.greedy[i+j+1]
				f.prev[j][i] = int32(f.seq[i+j+1])
			}
		}
	}
	return nil
}

// windowCache gives step i's window: a fresh one from next (run into f) while fewer than n
// are kept (n == 0: always fresh, nothing kept), then the kept window i mod n.
type windowCache struct {
	f      *features
	n      int
	hidden [][]float32
	labels [][][]int32
	prev   [][][]int32
}

// window returns step i's hidden rows, labels and previous tokens per head.
func (c *windowCache) window(i int, next func() error) ([]float32, [][]int32, [][]int32, error) {
	if c.n > 0 && len(c.hidden) == c.n {
		return c.hidden[i%c.n], c.labels[i%c.n], c.prev[i%c.n], nil
	}
	if err := next(); err != nil {
		return nil, nil, nil, err
	}
	if c.n == 0 {
		return c.f.hidden, c.f.labels, c.f.prev, nil
	}
	c.hidden = append(c.hidden, append([]float32(nil), c.f.hidden...))
	c.labels = append(c.labels, copyRows(c.f.labels))
	c.prev = append(c.prev, copyRows(c.f.prev))
	return c.hidden[len(c.hidden)-1], c.labels[len(c.labels)-1], c.prev[len(c.prev)-1], nil
}

func copyRows(rows [][]int32) [][]int32 {
	var out [][]int32
	for _, r := range rows {
		out = append(out, append([]int32(nil), r...))
	}
	return out
}

// gatherEmb writes the embedding rows of toks (a zero row for −1) into dst [len(toks), D]
// and returns it; nil when embd is nil (no token input).
func gatherEmb(dst, embd []float32, toks []int32, D int) []float32 {
	if embd == nil {
		return nil
	}
	dst = grow(dst, len(toks)*D)
	for i, t := range toks {
		row := dst[i*D : (i+1)*D]
		if t < 0 {
			clear(row)
			continue
		}
		copy(row, embd[int(t)*D:(int(t)+1)*D])
	}
	return dst
}
