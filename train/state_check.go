// This file implements the checks of a checkpoint's trainer.json on resume: every counter in
// range, the run's configuration valid, the model shape valid, so that a damaged or hand-edited
// file is refused with the field named instead of resuming from a nonsensical state.
package train

import (
	"errors"
	"fmt"
	"math"
)

// validate checks every field of a trainer.json.
func (st *State) validate() error {
	if st.Version != CheckpointVersion {
		return fmt.Errorf("version %d, this build reads %d", st.Version, CheckpointVersion)
	}
	ints := []struct {
		name string
		v    int64
	}{{"step", int64(st.Step)}, {"tokens", st.Tokens}, {"loader_position", st.LoaderPosition},
		{"loader_epoch", int64(st.LoaderEpoch)}, {"adam_step", int64(st.AdamStep)}}
	for _, f := range ints {
		if f.v < 0 {
			return fmt.Errorf("%s = %d, must not be negative", f.name, f.v)
		}
	}
	if st.AdamStep > st.Step {
		return fmt.Errorf("adam_step %d is more than step %d", st.AdamStep, st.Step)
	}
	if e := st.ElapsedSeconds; math.IsNaN(e) || e < 0 || e > 1e11 {
		return fmt.Errorf("elapsed_seconds = %g, want a duration in seconds", e)
	}
	if l := float64(st.TrainLoss); math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
		return fmt.Errorf("train_loss = %g, want a finite loss", l)
	}
	if len(st.RNG) == 0 {
		return errors.New("rng is empty")
	}
	if err := st.Config.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := st.Model.Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if c := st.Config; st.Model.Dim != c.Dim || st.Model.Layers != c.Layers || st.Model.Heads != c.Heads {
		return fmt.Errorf("model (dim %d, layers %d, heads %d) disagrees with config (dim %d, layers %d, heads %d)",
			st.Model.Dim, st.Model.Layers, st.Model.Heads, c.Dim, c.Layers, c.Heads)
	}
	return nil
}
