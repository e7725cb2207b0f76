// This file is the dropout op (Srivastava et al. 2014) that fine-tuning puts on a low-rank
// adapter's input (PEFT's lora_dropout): in training each element is zeroed with probability
// p and the others scaled by 1/(1-p); outside training it is the identity. The mask is a
// function of the executor's (seed, step key), the node's salt and the element's index, not of
// the values, so the gradient is the same op applied to dy (the same mask) and a resumed run
// draws the same masks.
package graph

func init() {
	register(&OpDef{Name: "dropout", MinArgs: 1, MaxArgs: 1,
		Attrs: []AttrSpec{{"p", AttrFloat, true}, {"salt", AttrInt, false}},
		Doc:   "training: x·mask/(1-p), mask ~ Bernoulli(1-p) from (seed, step, salt, index); otherwise x",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			p := at.Float("p", 0)
			if err := want(p >= 0 && p < 1, "dropout p %g outside [0, 1)", p); err != nil {
				return nil, err
			}
			return unaryType(a, at)
		}})
	gradRules["dropout"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("dropout", n.Attrs, dys[0])}
	}
}

// mix64 is SplitMix64's finalizer, a bijection of uint64 that scatters nearby inputs.
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// DropoutKeep reports whether element i of the dropout node with this salt is kept (with
// probability 1-p) in training with the executor's seed and key. graph/ref runs dropout with
// seed and key 0, a fixed mask, so that its gradient can be checked.
func DropoutKeep(seed, key, salt uint64, i int, p float64) bool {
	h := mix64(mix64(mix64(seed^0x9e3779b97f4a7c15)+key)+salt) + uint64(i)*0x9e3779b97f4a7c15
	u := float64(mix64(h)>>11) / (1 << 53) // uniform in [0, 1)
	return u >= p
}
