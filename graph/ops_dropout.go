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
