package trainexec

import "fmt"

// SetSoftTargets makes the following Backward calls differentiate the cross-entropy against
// target distributions instead of the targets' one-hot rows: soft holds maxB*maxT rows of the
// vocabulary's probabilities (row r for the batch's row r, as the logits), read at Backward. The
// targets still say which rows are in the loss (-1: none) and Forward's loss stays the one of
// the targets. nil returns to the targets. Only for the single-device cross_entropy (not a
// tensor-parallel cross_entropy_shard, whose rows hold a slice of the vocabulary).
func (p *Program) SetSoftTargets(soft []float32) error {
	if soft == nil {
		p.soft = nil
		return nil
	}
	if p.logits == nil {
		return fmt.Errorf("trainexec: soft targets on a program without logits")
	}
	V := p.inner[p.logits]
	if len(soft) < p.maxB*p.maxT*V {
		return fmt.Errorf("trainexec: %d soft-target values for up to %d rows of %d", len(soft), p.maxB*p.maxT, V)
	}
	for _, n := range p.g.Nodes {
		if n.Op == "cross_entropy_shard" {
			return fmt.Errorf("trainexec: soft targets are not supported with a tensor-parallel loss")
		}
	}
	p.soft = soft
	return nil
}
