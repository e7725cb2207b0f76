// This file keeps the hidden states of a forward pass: the final-norm output rows (the
// vectors the output matrix turns into logits) of the rows whose logits were asked for, which
// a learned draft head (package spec) drafts from and its trainer learns on.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph/exec"
)

// HiddenName names the final-norm output [logit rows, Dim] in a family's graph; Batch.Hidden
// needs a family to name it so.
const HiddenName = "hidden"

// hiddenRows is a Batch's copy of the last forward's hidden rows.
type hiddenRows struct {
	id   int           // the program's value id of HiddenName (valid for prog)
	prog *exec.Program // the program id was looked up in
	rows []float32
}

// keep copies the hidden rows of b's last run (nl rows of dim) when b.KeepHidden is set.
func (h *hiddenRows) keep(b *Batch, dim, nl int) error {
	if !b.KeepHidden {
		h.rows = h.rows[:0]
		return nil
	}
	if h.prog != b.prog {
		id, err := b.prog.Lookup(HiddenName)
		if err != nil {
			return fmt.Errorf("model: hidden states: %w", err)
		}
		h.id, h.prog = id, b.prog
	}
	src := b.prog.Data(h.id)
	if len(src) < nl*dim {
		return fmt.Errorf("model: hidden states: %d values for %d rows of %d", len(src), nl, dim)
	}
	h.rows = append(h.rows[:0], src[:nl*dim]...)
	return nil
}

// Hidden returns the hidden rows [rows with logits, Dim] of b's last forward, in the order of
// its logits (row i times the output matrix is logits row i): the output norm's result.
// nil unless KeepHidden was set for that forward. Valid until b's next use.
func (b *Batch) Hidden() []float32 {
	if !b.KeepHidden {
		return nil
	}
	return b.hidden.rows
}

// KeepHidden makes c's forwards keep their hidden rows (see Batch.KeepHidden).
func (c *Cache) KeepHidden(on bool) {
	if c.batch == nil {
		c.batch = &Batch{}
	}
	c.batch.KeepHidden = on
}

// Hidden returns the hidden rows of c's last Forward ([rows with logits, Dim]; nil unless
// KeepHidden(true)); valid until c's next Forward.
func (c *Cache) Hidden() []float32 {
	if c.batch == nil {
		return nil
	}
	return c.batch.Hidden()
}
