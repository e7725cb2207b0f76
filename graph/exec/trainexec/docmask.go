// This file holds the document mask of packed sequences: several short examples in one row of
// T tokens, each attending only to itself (kernels.TrainAttnOpts.Starts, forward and backward).
// Positions keep counting across a row: RoPE scores depend only on the distance between a
// query and a key, so an example gives the same attention wherever it sits in the row.
package trainexec

import "fmt"

// SetDocStarts sets, for the following Forward/Backward calls, the first row of each row's
// document: starts holds B*T values, starts[b*T+t] in [0, t], not decreasing along a batch row
// and equal to t where a new document begins. nil returns to plain causal attention. The slice
// is read by every later call until the next SetDocStarts (the caller keeps it unchanged).
func (p *Program) SetDocStarts(starts []int32, B, T int) error {
	if starts == nil {
		p.docStarts = nil
		return nil
	}
	if err := CheckDocStarts(starts, B, T); err != nil {
		return err
	}
	p.docStarts = starts[:B*T]
	return nil
}

// CheckDocStarts reports whether starts is a valid document layout of B rows of T tokens.
func CheckDocStarts(starts []int32, B, T int) error {
	if len(starts) < B*T {
		return fmt.Errorf("trainexec: %d document starts for %d x %d rows", len(starts), B, T)
	}
	for b := range B {
		prev := int32(0)
		for t := range T {
			s := starts[b*T+t]
			if s < prev || int(s) > t || (s != prev && int(s) != t) {
				return fmt.Errorf("trainexec: document start %d at row %d of sequence %d (previous %d)", s, t, b, prev)
			}
			prev = s
		}
	}
	return nil
}
