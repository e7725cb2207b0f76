// The --w8a8 flags of the commands that load a model: convert the block matmul weights to
// W8A8 (int8 per-channel weights x int8 per-token activations, SmoothQuant scale migration
// from calibration text) after loading. docs/quantization.md, "W8A8 int8 prefill".
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

type w8a8Flags struct {
	on        bool
	calib     string
	saveStats string
	alpha     float64
	tokens    int
	log       io.Writer // the command's stderr
}

func (f *w8a8Flags) register(fs *flag.FlagSet) {
	f.log = fs.Output()
	fs.BoolVar(&f.on, "w8a8", false, "run the block matmuls in W8A8: int8 weights (one scale per output channel, made at load) x int8 activations (one scale per token); with --w8a8-calibration, SmoothQuant's scales first")
	fs.StringVar(&f.calib, "w8a8-calibration", "", "with --w8a8: calibration text (per-channel max |x| is collected on it) or a .json of statistics saved by --w8a8-save-stats; unset: no smoothing")
	fs.StringVar(&f.saveStats, "w8a8-save-stats", "", "with --w8a8-calibration TEXT: write the collected statistics to this .json for reuse")
	fs.Float64Var(&f.alpha, "w8a8-alpha", 0.5, "SmoothQuant migration strength alpha in [0, 1]: s_j = max|X_j|^alpha / max|W_j|^(1-alpha)")
	fs.IntVar(&f.tokens, "w8a8-calib-tokens", 8192, "calibration tokens to run (from the start of the text)")
}

// apply converts b's model when --w8a8 is set, logging what it did to the command's stderr.
func (f *w8a8Flags) apply(b *loader.Bundle) error {
	w := f.log
	if !f.on {
		if f.calib != "" || f.saveStats != "" {
			return usagef("--w8a8-calibration and --w8a8-save-stats need --w8a8")
		}
		return nil
	}
	if f.alpha < 0 || f.alpha > 1 {
		return usagef("--w8a8-alpha must be in [0, 1]")
	}
	t0 := time.Now()
	var stats *model.W8A8Stats
	switch {
	case f.calib == "":
		fmt.Fprintln(w, "w8a8: no --w8a8-calibration: weights converted without smoothing")
	case strings.HasSuffix(f.calib, ".json"):
		s, err := model.LoadW8A8Stats(f.calib)
		if err != nil {
			return err
		}
		stats = s
	default:
		s, err := f.calibrate(b, w)
		if err != nil {
			return err
		}
		stats = s
	}
	o := model.W8A8Options{Alpha: f.alpha}
	if f.alpha == 0 {
		o.Alpha = -1 // no migration
	}
	if stats != nil {
		o.Stats = stats.Max
	}
	rep, err := b.Model.ApplyW8A8(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "w8a8: %d weights converted (%d smoothed, alpha %g), %.1f -> %.1f MB, in %.1f s\n",
		rep.Converted, rep.Smoothed, f.alpha, float64(rep.BytesBefore)/1e6, float64(rep.BytesAfter)/1e6, time.Since(t0).Seconds())
	return nil
}

// calibrate runs the model on the first f.tokens tokens of the calibration text, in chunks of
// at most 512, collecting per-channel max |x|.
func (f *w8a8Flags) calibrate(b *loader.Bundle, w io.Writer) (*model.W8A8Stats, error) {
	text, err := os.ReadFile(f.calib)
	if err != nil {
		return nil, err
	}
	if b.Tok == nil {
		return nil, fmt.Errorf("w8a8 calibration: the model has no tokenizer")
	}
	ids := b.Tok.Encode(string(text), true, false)
	ctx := 512
	if n := b.Model.Config.CtxLen; n > 0 && n < ctx {
		ctx = n
	}
	if len(ids) < 2*ctx && len(ids) < f.tokens {
		return nil, fmt.Errorf("w8a8 calibration: %s has %d tokens, need at least %d (two chunks of %d)", f.calib, len(ids), min(2*ctx, f.tokens), ctx)
	}
	ids = ids[:min(len(ids), max(f.tokens, 2))]
	chunks := max(1, len(ids)/ctx)
	s := model.NewW8A8Stats()
	if err := s.Run(b.Model, ids[:chunks*min(ctx, len(ids))], min(ctx, len(ids))); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "w8a8: calibration on %d tokens of %s (%d matmul inputs)\n", s.Tokens, f.calib, len(s.Max))
	if f.saveStats != "" {
		if err := s.Save(f.saveStats); err != nil {
			return nil, err
		}
	}
	return s, nil
}
