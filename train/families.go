// This file holds the settings of the families whose attention differs from Llama's (Gemma 2
// and 3's sliding windows, soft-caps, query scalar and local/global pattern; Phi-3's window)
// and their validation. Zero leaves a setting to the family's default (model.Family.Fix:
// Gemma 2's window 4096, attention soft-cap 50, final soft-cap 30, query scalar the head dim;
// Gemma 3's window 4096 with one global layer in 6; Phi-3 without a window).
package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/llmcloud/llmcloud/model"
)

// familySetting is one of these settings: its flag, value and the architectures it applies to.
type familySetting struct {
	flag  string
	v     float64
	archs []string
}

func (c *Config) familySettings() []familySetting {
	return []familySetting{
		{"window", float64(c.Window), []string{"gemma2", "gemma3", "phi3"}},
		{"attn-softcap", c.AttnSoftcap, []string{"gemma2"}},
		{"final-softcap", c.FinalSoftcap, []string{"gemma2"}},
		{"query-scalar", c.QueryScalar, []string{"gemma2", "gemma3"}},
		{"sliding-pattern", float64(c.SlidingPattern), []string{"gemma3"}},
	}
}

// validateFamily checks the family settings against the architecture, and the parallel modes
// these families do not run.
func (c *Config) validateFamily() error {
	for _, s := range c.familySettings() {
		if s.v < 0 || math.IsNaN(s.v) || math.IsInf(s.v, 0) {
			return fmt.Errorf("train: --%s = %g, must be finite and not negative", s.flag, s.v)
		}
		if s.v != 0 && !slices.Contains(s.archs, c.Arch) {
			return fmt.Errorf("train: --%s applies to --arch %v, not %q", s.flag, s.archs, c.Arch)
		}
	}
	if c.SlidingPattern > model.MaxLayers+1 {
		return fmt.Errorf("train: --sliding-pattern = %d, must be at most %d", c.SlidingPattern, model.MaxLayers+1)
	}
	switch c.Arch {
	case "gemma2", "gemma3", "phi3":
		if c.TP > 1 {
			return fmt.Errorf("train: --tp %d: tensor parallelism does not split --arch %s; use --dp", c.TP, c.Arch)
		}
		if c.PP > 1 {
			return fmt.Errorf("train: --pp %d: pipeline parallelism does not run --arch %s; use --dp", c.PP, c.Arch)
		}
	}
	return nil
}

// setFamily writes the family settings into mc (before the family's Fix fills the defaults).
func (c *Config) setFamily(mc *model.Config) {
	mc.SlidingWindow, mc.AttnSoftcap, mc.FinalSoftcap = c.Window, c.AttnSoftcap, c.FinalSoftcap
	mc.AttnScalar, mc.SlidingPattern = c.QueryScalar, c.SlidingPattern
}
