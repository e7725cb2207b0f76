// The profile's measurements: a grid of step shapes within the engine's limits, each run a few
// times in alternating rounds (the host is shared: a burst of load spreads over every shape
// rather than hitting one) and summarized by its median.

package sim

import (
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/engine"
)

// Grid returns the step shapes to measure for an engine of cfg: decode steps of 1 to
// MaxNumSeqs sequences at short to full contexts, prefill steps of one or several prompts
// up to the token budget at several cached prefixes, and mixed steps; only shapes the KV pool
// can hold. quick keeps a handful of each (for tests).
func Grid(cfg engine.Config, quick bool) []engine.StepShape {
	L, B, S := cfg.MaxModelLenTokens, cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs
	seqs := []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
	ctxs := []int{8, L / 8, L / 2, L - 1}
	prompts := []int{8, 32, 128, 512, 2048}
	pctx := []int{0, L / 4, L / 2}
	mixP, mixD := []int{32, 256}, []int{4, 32}
	if quick {
		seqs, ctxs, prompts, pctx = []int{1, 8, 64}, []int{8, L / 2}, []int{16, 128, 512}, []int{0, L / 4}
		mixP, mixD = []int{64}, []int{8}
	}
	var out []engine.StepShape
	seen := map[string]bool{}
	add := func(s engine.StepShape) {
		if s.NumTokens() > B || len(s.Prefill)+len(s.Decode) > S || blocksOf(s, cfg.BlockSizeTokens) > cfg.NumBlocks {
			return
		}
		for _, c := range s.Prefill {
			if c.Tokens < 1 || c.Context+c.Tokens >= L {
				return
			}
		}
		for _, c := range s.Decode {
			if c < 1 || c >= L {
				return
			}
		}
		k := key(s)
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	for _, d := range seqs {
		for _, c := range ctxs {
			add(engine.StepShape{Decode: repeat(c, d)})
		}
	}
	for _, p := range prompts {
		for _, c := range pctx {
			add(engine.StepShape{Prefill: []engine.Chunk{{Tokens: min(p, L-1-c), Context: c}}})
		}
		if p >= 32 { // several prompts in one step: as many rows, less attention
			add(engine.StepShape{Prefill: slices.Repeat([]engine.Chunk{{Tokens: p / 4}}, 4)})
		}
	}
	for _, p := range mixP {
		for _, d := range mixD {
			for _, c := range []int{L / 4, L / 2} {
				add(engine.StepShape{Prefill: []engine.Chunk{{Tokens: min(p, L-1-c), Context: c}}, Decode: repeat(c, d)})
			}
		}
	}
	return out
}

func repeat(v, n int) []int { return slices.Repeat([]int{v}, n) }

func blocksOf(s engine.StepShape, bs int) int {
	n := 0
	for _, c := range s.Prefill {
		n += (c.Context + c.Tokens + bs - 1) / bs
	}
	for _, c := range s.Decode {
		n += (c + 1 + bs - 1) / bs
	}
	return n
}

func key(s engine.StepShape) string {
	f := ShapeFeatures(s)
	b := make([]byte, 0, 64)
	for _, v := range f {
		b = append(b, byte(int64(v)), byte(int64(v)>>8), byte(int64(v)>>16), byte(int64(v)>>24), byte(int64(v)>>32))
	}
	return string(b) + string(rune(len(s.Prefill)))
}

// Measure runs every shape reps times, round after round, and returns each shape's median.
// warm runs first, unmeasured.
func Measure(run func(engine.StepShape) (time.Duration, error), shapes []engine.StepShape, reps, warm int) ([]Point, error) {
	for i := range min(warm, len(shapes)) {
		if _, err := run(shapes[len(shapes)-1-i]); err != nil {
			return nil, err
		}
	}
	times := make([][]float64, len(shapes))
	for range reps {
		for i, s := range shapes {
			d, err := run(s)
			if err != nil {
				return nil, err
			}
			times[i] = append(times[i], d.Seconds())
		}
	}
	pts := make([]Point, len(shapes))
	for i, s := range shapes {
		pts[i] = Point{Phase: phaseOf(s), Shape: s, Seconds: median(times[i])}
	}
	return pts, nil
}

// Split returns every fourth point of each phase as held out and the rest to fit.
func Split(pts []Point) (fit, held []Point) {
	n := map[string]int{}
	for _, p := range pts {
		n[p.Phase]++
		if n[p.Phase]%4 == 0 {
			held = append(held, p)
		} else {
			fit = append(fit, p)
		}
	}
	return fit, held
}
