// This file checks the moe op's DeepSeek-V3 routing attributes (ops_moe.go): the selection
// bias argument and grouped top-k.
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// MoEBiasArgs is the number of selection bias arguments (0 or 1, the last) of a moe node.
func MoEBiasArgs(at Attrs) int {
	if at.Int("bias", 0) != 0 {
		return 1
	}
	return 0
}

// MoEExpertBiases reports whether a moe node has gpt-oss's biases (attribute expert_bias=1):
// four arguments before the selection bias, the router's f32[E], the experts' gate and up
// f32[E,F] and down f32[E,D].
func MoEExpertBiases(at Attrs) bool { return at.Int("expert_bias", 0) != 0 }

// MoETail is the number of arguments after the routed and shared experts' weights: the
// expert biases and the selection bias.
func MoETail(at Attrs) int {
	n := MoEBiasArgs(at)
	if MoEExpertBiases(at) {
		n += 4
	}
	return n
}

// MoEPlain reports whether a moe node routes and activates as the trainer can (no selection
// bias, groups, expert biases or gpt-oss activation).
func MoEPlain(at Attrs) bool {
	g, _, _ := MoEGroups(at)
	return MoETail(at) == 0 && g <= 1 && at.Str("act", MoESwiGLU) == MoESwiGLU
}

// MoE activations (the act attribute).
const (
	MoESwiGLU    = "swiglu"
	MoESwiGLUOAI = "swiglu_oai"
)

// MoEGroups returns the grouped top-k attributes: groups (1: none), groups used, group_top.
func MoEGroups(at Attrs) (groups, used, top int) {
	g := int(at.Int("groups", 1))
	return g, int(at.Int("groups_used", int64(g))), int(at.Int("group_top", 1))
}

func moeRouteAttrs(a []Type, at Attrs, e int) error {
	switch b := at.Int("bias", 0); b {
	case 0:
	case 1:
		last := a[len(a)-1]
		if err := want(len(a) >= 6 && last.Equal(Type{tensor.F32, Shape{D(e)}}), "bias=1: the last argument must be the selection bias f32[%d], is %v", e, last); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bias = %d: want 0 or 1", b)
	}
	if eb := at.Int("expert_bias", 0); eb != 0 {
		end := len(a) - MoEBiasArgs(at)
		gt := a[2]
		if err := want(eb == 1 && end >= 9, "expert_bias = %d: want 1 with four bias arguments", eb); err != nil {
			return err
		}
		if len(gt.Shape) == 3 {
			e, f, d := gt.Shape[0], gt.Shape[1], gt.Shape[2]
			for i, s := range []Shape{{e}, {e, f}, {e, f}, {e, d}} {
				b := a[end-4+i]
				if err := want(b.Equal(Type{tensor.F32, s}), "expert bias %d (router, gate, up, down) must be f32%v, is %v", i, s, b); err != nil {
					return err
				}
			}
		}
	}
	switch act := at.Str("act", MoESwiGLU); act {
	case MoESwiGLU:
	case MoESwiGLUOAI:
		al, l := at.Float("alpha", 1.702), at.Float("limit", 7)
		if err := want(al > 0 && l > 0 && al < 1e6 && l < 1e30, "alpha %v, limit %v: want positive", al, l); err != nil {
			return err
		}
	default:
		return fmt.Errorf("act %q: want %q or %q", act, MoESwiGLU, MoESwiGLUOAI)
	}
	g, u, top := MoEGroups(at)
	k := int(at.Int("experts_used", 0))
	if err := want(g >= 1 && e%g == 0, "groups = %d: want a divisor of the %d experts", g, e); err != nil {
		return err
	}
	if err := want(u >= 1 && u <= g && u*(e/g) >= k, "groups_used = %d: want [1, groups %d] holding at least experts_used %d experts (groups of %d)", u, g, k, e/g); err != nil {
		return err
	}
	return want(top >= 1 && top <= e/g, "group_top = %d: want [1, %d] (a group's experts)", top, e/g)
}
