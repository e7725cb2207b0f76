// This file is the op registry: each op's arity, attributes and type rule. The type rule
// computes the results' types from the arguments' and the attributes, or says what is wrong;
// Verify and Builder both use it, so a graph whose declared types disagree with its ops cannot
// be built or parsed.
//
// Ops cover the Llama family (Llama 2/3, Mistral, Qwen2/2.5/3) for serving and training, with
// attributes left for what comes next (sliding windows, soft-capping); fused ops are what the
// passes (passes.go) turn chains of simple ops into.
package graph

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// AttrSpec declares one attribute of an op.
type AttrSpec struct {
	Name     string
	Kind     AttrKind
	Required bool
}

// OpDef describes an op.
type OpDef struct {
	Name    string
	MinArgs int
	MaxArgs int // -1: any number
	Attrs   []AttrSpec
	Doc     string
	// Infer returns the result types for these argument types and attributes.
	Infer func(args []Type, a Attrs) ([]Type, error)
}

var ops = map[string]*OpDef{}

func register(d *OpDef) { ops[d.Name] = d }

// Op returns the definition of the op called name, or nil.
func Op(name string) *OpDef { return ops[name] }

// OpNames lists the registered ops (unordered).
func OpNames() []string {
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	return names
}

func isFloat(t Type) bool { return t.DType == tensor.F32 }

func want(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// rowsOf is every dimension but the last: the rows a row-wise op runs over.
func rowsOf(t Type) Shape { return t.Shape[:len(t.Shape)-1] }

func withLast(rows Shape, last Dim) Shape {
	s := append(Shape(nil), rows...)
	return append(s, last)
}

func init() {
	register(&OpDef{Name: "embedding", MinArgs: 2, MaxArgs: 2,
		Doc: "rows of table [V,D] (any dtype) picked by ids i32[..] -> f32[..,D]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(len(a[0].Shape) == 2, "table must be 2-d, is %v", a[0]); err != nil {
				return nil, err
			}
			if err := want(a[1].DType == tensor.I32, "ids must be i32, are %v", a[1]); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, withLast(a[1].Shape, a[0].Shape[1])}}, nil
		}})
	register(&OpDef{Name: "matmul", MinArgs: 2, MaxArgs: 2,
		Doc: "x f32[..,K] times w[N,K] (any weight dtype) transposed -> f32[..,N]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			return matmulType(a[0], a[1])
		}})
	register(&OpDef{Name: "matmul_multi", MinArgs: 2, MaxArgs: -1,
		Doc: "one x f32[..,K] times several w_i[N_i,K]: the input is prepared (quantized) once -> one result per weight",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			var out []Type
			for i, w := range a[1:] {
				t, err := matmulType(a[0], w)
				if err != nil {
					return nil, fmt.Errorf("weight %d: %w", i, err)
				}
				out = append(out, t...)
			}
			return out, nil
		}})
	register(&OpDef{Name: "rms_norm", MinArgs: 2, MaxArgs: 2,
		Attrs: []AttrSpec{{"eps", AttrFloat, true}},
		Doc:   "x f32[..,D] normalized by groups of G = len(w) (G = D: the row; G < D: each head) times w f32[G]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := normArgs(a[0], a[1]); err != nil {
				return nil, err
			}
			return []Type{a[0]}, nil
		}})
	register(&OpDef{Name: "add_rms_norm", MinArgs: 3, MaxArgs: 3,
		Attrs: []AttrSpec{{"eps", AttrFloat, true}},
		Doc:   "fused: s = x + y, then rms_norm(s, w) -> (s, normed)",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(a[0].Equal(a[1]), "x %v and y %v differ", a[0], a[1]); err != nil {
				return nil, err
			}
			if err := normArgs(a[0], a[2]); err != nil {
				return nil, err
			}
			return []Type{a[0], a[0]}, nil
		}})
	for _, name := range []string{"add", "mul"} {
		register(&OpDef{Name: name, MinArgs: 2, MaxArgs: 2,
			Doc:   "element-wise; b is a's shape or its trailing dimensions (broadcast over rows)",
			Infer: binaryType})
	}
	for _, name := range []string{"silu", "softmax"} {
		register(&OpDef{Name: name, MinArgs: 1, MaxArgs: 1, Doc: "element-wise / over the last dimension",
			Infer: unaryType})
	}
	register(&OpDef{Name: "scale", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{{"by", AttrFloat, true}},
		Doc: "x times a constant", Infer: unaryType})
	register(&OpDef{Name: "softcap", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{{"cap", AttrFloat, true}},
		Doc: "cap * tanh(x / cap) (Gemma 2's logit soft-capping)", Infer: unaryType})
	register(&OpDef{Name: "swiglu", MinArgs: 2, MaxArgs: 2,
		Doc: "fused: silu(gate) * up",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(isFloat(a[0]) && a[0].Equal(a[1]), "gate %v and up %v must be equal f32 types", a[0], a[1]); err != nil {
				return nil, err
			}
			return []Type{a[0]}, nil
		}})
	register(&OpDef{Name: "rope", MinArgs: 2, MaxArgs: 3,
		Attrs: append([]AttrSpec{{"heads", AttrInt, true}, {"head_dim", AttrInt, true}, {"theta", AttrFloat, true},
			{"neox", AttrInt, false}, {"mscale", AttrFloat, false}, {"freq_scale", AttrFloat, false}}, YarnAttrs...),
		Doc: "rotary embedding of x f32[n,heads*head_dim] at pos i32[n]; optional freq divisors f32[head_dim/2] (Llama 3, Phi-3 LongRoPE); neox=1 rotates halves, 0 pairs; mscale multiplies cos and sin (LongRoPE's attention factor, default 1); freq_scale multiplies every angle (linear scaling: 1/factor, Gemma 3's global layers; default 1); " +
			"yarn_factor (yarn_orig_ctx, yarn_beta_fast, yarn_beta_slow): YaRN scaling as ggml's rope with ext_factor 1 (gpt-oss, DeepSeek)",
		Infer: ropeType})
	register(&OpDef{Name: "attention", MinArgs: 3, MaxArgs: 4,
		Attrs: []AttrSpec{{"layer", AttrInt, true}, {"heads", AttrInt, true}, {"kv_heads", AttrInt, true},
			{"head_dim", AttrInt, true}, {"window", AttrInt, false}, {"softcap", AttrFloat, false},
			{"scale", AttrFloat, false}},
		Doc: "causal attention of q f32[n,heads*hd] over k, v f32[n,kv_heads*hd] and the earlier positions of each row's sequence " +
			"(serving: k, v are written into the layer's paged KV cache first; training: the batch is whole sequences); " +
			"window > 0 limits each row to that many latest positions (itself included); softcap > 0 caps each score s as softcap·tanh(s/softcap); " +
			"scale > 0 multiplies q·k instead of 1/sqrt(head_dim); a 4th argument sinks f32[heads] (gpt-oss) is a learned logit per head " +
			"that joins each row's softmax denominator (exp(sink) next to the scores' exps) and weighs no value",
		Infer: attentionType})
	register(&OpDef{Name: "gather_rows", MinArgs: 2, MaxArgs: 2,
		Doc: "rows idx i32[s] of x f32[n,D] -> f32[s,D]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(len(a[0].Shape) == 2 && isFloat(a[0]), "x must be f32[n,D], is %v", a[0]); err != nil {
				return nil, err
			}
			if err := want(a[1].DType == tensor.I32 && len(a[1].Shape) == 1, "idx must be i32[s], is %v", a[1]); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, Shape{a[1].Shape[0], a[0].Shape[1]}}}, nil
		}})
	register(&OpDef{Name: "cross_entropy", MinArgs: 2, MaxArgs: 2,
		Doc: "mean over rows of -log softmax(logits f32[s,V])[target] for targets i32[s] (target < 0: row ignored) -> f32[]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(len(a[0].Shape) == 2 && isFloat(a[0]), "logits must be f32[s,V], is %v", a[0]); err != nil {
				return nil, err
			}
			if err := want(a[1].DType == tensor.I32 && len(a[1].Shape) == 1 && a[1].Shape[0] == a[0].Shape[0],
				"targets must be i32[%v], are %v", a[0].Shape[0], a[1]); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, Shape{}}}, nil
		}})
}

func matmulType(x, w Type) ([]Type, error) {
	if err := want(isFloat(x) && len(x.Shape) >= 1, "x must be f32 with at least 1 dimension, is %v", x); err != nil {
		return nil, err
	}
	if err := want(len(w.Shape) == 2, "weight must be 2-d [N,K], is %v", w); err != nil {
		return nil, err
	}
	if err := want(x.Shape.Last() == w.Shape[1], "x %v and weight %v: inner dimensions differ", x, w); err != nil {
		return nil, err
	}
	return []Type{{tensor.F32, withLast(rowsOf(x), w.Shape[0])}}, nil
}

func normArgs(x, w Type) error {
	if err := want(isFloat(x) && len(x.Shape) >= 1 && x.Shape.Last().Known(), "x must be f32[..,D], is %v", x); err != nil {
		return err
	}
	if err := want(isFloat(w) && len(w.Shape) == 1 && w.Shape[0].Known(), "weight must be f32[G], is %v", w); err != nil {
		return err
	}
	d, g := x.Shape.Last().N, w.Shape[0].N
	return want(g > 0 && d%g == 0, "weight of %d does not divide rows of %d", g, d)
}

func binaryType(a []Type, _ Attrs) ([]Type, error) {
	x, y := a[0], a[1]
	if err := want(isFloat(x) && isFloat(y), "operands must be f32, are %v and %v", x, y); err != nil {
		return nil, err
	}
	if len(y.Shape) > len(x.Shape) || !y.Shape.Equal(x.Shape[len(x.Shape)-len(y.Shape):]) {
		return nil, fmt.Errorf("b %v is neither a's shape %v nor its trailing dimensions", y, x)
	}
	return []Type{x}, nil
}

func unaryType(a []Type, _ Attrs) ([]Type, error) {
	if err := want(isFloat(a[0]), "x must be f32, is %v", a[0]); err != nil {
		return nil, err
	}
	return []Type{a[0]}, nil
}

func ropeType(a []Type, at Attrs) ([]Type, error) {
	heads, hd := at.Int("heads", 0), at.Int("head_dim", 0)
	x := a[0]
	if err := yarnAttrs(at); err != nil {
		return nil, err
	}
	if err := want(heads > 0 && hd > 0 && hd%2 == 0, "heads %d, head_dim %d: want positive, head_dim even", heads, hd); err != nil {
		return nil, err
	}
	if err := want(isFloat(x) && len(x.Shape) == 2 && x.Shape[1] == D(int(heads*hd)), "x must be f32[n,%d], is %v", heads*hd, x); err != nil {
		return nil, err
	}
	if err := want(a[1].DType == tensor.I32 && a[1].Shape.Equal(x.Shape[:1]), "pos must be i32[%v], is %v", x.Shape[0], a[1]); err != nil {
		return nil, err
	}
	if fs := at.Float("freq_scale", 1); !(fs > 0) || math.IsInf(fs, 0) {
		return nil, fmt.Errorf("freq_scale %v: must be positive and finite", fs)
	}
	if len(a) == 3 {
		if err := want(isFloat(a[2]) && a[2].Shape.Equal(Dims(int(hd/2))), "freqs must be f32[%d], are %v", hd/2, a[2]); err != nil {
			return nil, err
		}
	}
	return []Type{x}, nil
}

func attentionType(a []Type, at Attrs) ([]Type, error) {
	heads, kvh, hd := at.Int("heads", 0), at.Int("kv_heads", 0), at.Int("head_dim", 0)
	if err := want(heads > 0 && kvh > 0 && hd > 0 && heads%kvh == 0, "heads %d, kv_heads %d, head_dim %d: want positive, heads a multiple of kv_heads", heads, kvh, hd); err != nil {
		return nil, err
	}
	if err := want(at.Int("layer", -1) >= 0, "layer must be >= 0"); err != nil {
		return nil, err
	}
	if err := want(at.Int("window", 0) >= 0 && at.Float("softcap", 0) >= 0 && at.Float("scale", 0) >= 0,
		"window %d, softcap %v, scale %v: must not be negative", at.Int("window", 0), at.Float("softcap", 0), at.Float("scale", 0)); err != nil {
		return nil, err
	}
	q, k, v := a[0], a[1], a[2]
	if err := want(isFloat(q) && len(q.Shape) == 2 && q.Shape[1] == D(int(heads*hd)), "q must be f32[n,%d], is %v", heads*hd, q); err != nil {
		return nil, err
	}
	kt := Type{tensor.F32, Shape{q.Shape[0], D(int(kvh * hd))}}
	if err := want(k.Equal(kt) && v.Equal(kt), "k and v must be %v, are %v and %v", kt, k, v); err != nil {
		return nil, err
	}
	if len(a) == 4 {
		st := Type{tensor.F32, Shape{D(int(heads))}}
		if err := want(a[3].Equal(st), "sinks must be %v (one per head), is %v", st, a[3]); err != nil {
			return nil, err
		}
	}
	return []Type{q}, nil
}
