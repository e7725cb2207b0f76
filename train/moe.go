// This file holds the mixture-of-experts settings' validation: the expert counts and widths,
// the load-balancing loss's weight, and the parallel modes that do not split experts.
package train

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/model"
)

// validateExperts checks --experts, --experts-used, --expert-ffn and --moe-aux-loss-coef
// against each other and the architecture.
func (c *Config) validateExperts() error {
	switch {
	case c.Experts < 0 || c.Experts > model.MaxExperts:
		return fmt.Errorf("train: --experts = %d, must be in [0, %d]", c.Experts, model.MaxExperts)
	case c.ExpertFFN < 0:
		return fmt.Errorf("train: --expert-ffn = %d, must not be negative", c.ExpertFFN)
	case c.MoEAuxCoef < 0 || math.IsNaN(c.MoEAuxCoef) || math.IsInf(c.MoEAuxCoef, 0):
		return fmt.Errorf("train: --moe-aux-loss-coef = %g, must be finite and not negative", c.MoEAuxCoef)
	}
	f := model.FamilyOf(c.Arch)
	if c.Experts == 0 {
		if c.ExpertsUsed != 0 || c.ExpertFFN != 0 {
			return fmt.Errorf("train: --experts-used %d and --expert-ffn %d need --experts", c.ExpertsUsed, c.ExpertFFN)
		}
		if f != nil && f.ExpertsOnly {
			return fmt.Errorf("train: --arch %s is a mixture of experts: set --experts and --experts-used", c.Arch)
		}
		return nil
	}
	if c.ExpertsUsed < 1 || c.ExpertsUsed > c.Experts {
		return fmt.Errorf("train: --experts-used = %d, must be in [1, %d] (--experts)", c.ExpertsUsed, c.Experts)
	}
	if f != nil && !f.Experts {
		return fmt.Errorf("train: --arch %s has no mixture-of-experts form (--experts %d)", c.Arch, c.Experts)
	}
	// Tensor and pipeline parallelism split the dense blocks only: the experts are not
	// sharded (expert parallelism) and the load-balancing loss spans the stages.
	if c.TP > 1 {
		return fmt.Errorf("train: --tp %d: tensor parallelism does not split a mixture of experts (--experts %d); use --dp", c.TP, c.Experts)
	}
	if c.PP > 1 {
		return fmt.Errorf("train: --pp %d: pipeline parallelism does not run a mixture of experts (--experts %d); use --dp", c.PP, c.Experts)
	}
	return nil
}
