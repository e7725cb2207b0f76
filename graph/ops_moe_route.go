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
