// This file is AWQ's scale search: the input channels of a group of weights that read one
// activation (q/k/v, gate/up, or a single o or down) are scaled by s_j = mean|x_j|^alpha
// (normalised so that max*min = 1) before round-to-nearest quantization, and the activation is
// divided by s_j in exchange — folded into the previous RMSNorm's weight or the previous
// matrix's rows by the caller (fold.go), so the file stays a plain GGUF. alpha is searched on
// a grid over [0, 1] for the smallest output error sum ||W X - Q(W s)/s X||² on calibration
// samples X; alpha = 0 is plain round-to-nearest, so the search never does worse than it on
// the samples.
package quant

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// AWQResult is the outcome of one search.
type AWQResult struct {
	Scales  []float32 // per input channel (multiply the weights' columns, divide the activation)
	Alpha   float64
	Err     float64 // output error at Alpha
	ErrRTN  float64 // output error of plain round-to-nearest (alpha = 0)
	Indexes int     // grid points tried
}

// AWQSearch searches the scales of weights ws (each [rows[i], k], types dts[i]) that share the
// input whose per-channel mean |x| is meanAbs, on samples x [n, k]; grid+1 alphas in [0, 1]
// (grid 0: 20).
func AWQSearch(ws [][]float32, rows []int, dts []tensor.DType, k int, meanAbs, x []float32, grid int) (AWQResult, error) {
	rounds := make([]Rounder, len(dts))
	for i, dt := range dts {
		rounds[i] = blockRounder(dt)
	}
	return AWQSearchRound(ws, rows, rounds, k, meanAbs, x, grid)
}

// Rounder returns the dequantized round-to-nearest form of w [rows, k] on some grid.
type Rounder func(w []float32, rows, k int) ([]float32, error)

// blockRounder rounds to the GGUF block type dt with the reference quantizer.
func blockRounder(dt tensor.DType) Rounder {
	return func(w []float32, rows, k int) ([]float32, error) {
		data, err := RTN(dt, w, rows, k)
		if err != nil {
			return nil, err
		}
		return Dequantize(dt, data, rows, k)
	}
}

// IntRounder rounds to the integer group grid g (Hugging Face AWQ/GPTQ).
func IntRounder(g IntGrid) Rounder {
	return func(w []float32, rows, k int) ([]float32, error) {
		l, err := RTNInt(w, rows, k, g)
		if err != nil {
			return nil, err
		}
		return l.Float32(), nil
	}
}

// AWQSearchRound is AWQSearch with weight i rounded by rounds[i].
func AWQSearchRound(ws [][]float32, rows []int, rounds []Rounder, k int, meanAbs, x []float32, grid int) (AWQResult, error) {
	var res AWQResult
	if len(meanAbs) != k || len(x) == 0 || len(x)%k != 0 {
		return res, fmt.Errorf("quant: awq: %d channel magnitudes and %d sample values for %d channels", len(meanAbs), len(x), k)
	}
	if grid <= 0 {
		grid = 20
	}
	n := len(x) / k
	res.Err = math.Inf(1)
	for gi := 0; gi <= grid; gi++ {
		alpha := float64(gi) / float64(grid)
		s := awqScales(meanAbs, alpha)
		var total float64
		for i, w := range ws {
			q, err := scaledRTN(rounds[i], w, rows[i], k, s)
			if err != nil {
				return res, err
			}
			e, err := outputErr(w, q, x, rows[i], k, n)
			if err != nil {
				return res, err
			}
			total += e
		}
		if gi == 0 {
			res.ErrRTN = total
		}
		if total < res.Err {
			res.Err, res.Alpha, res.Scales = total, alpha, s
		}
		res.Indexes++
	}
	return res, nil
}

// awqScales is mean|x|^alpha normalised by sqrt(max*min).
func awqScales(meanAbs []float32, alpha float64) []float32 {
	s := make([]float32, len(meanAbs))
	lo, hi := math.Inf(1), 0.0
	for j, a := range meanAbs {
		v := math.Pow(math.Max(float64(a), 1e-8), alpha)
		s[j] = float32(v)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	norm := float32(math.Sqrt(lo * hi))
	for j := range s {
		s[j] = max(s[j]/norm, 1e-4)
	}
	return s
}

// scaledRTN is Q(W diag(s)) diag(1/s): w's columns scaled, rounded by round, dequantized and
// unscaled.
func scaledRTN(round Rounder, w []float32, rows, k int, s []float32) ([]float32, error) {
	q, err := round(ScaleCols(w, rows, k, s), rows, k)
	if err != nil {
		return nil, err
	}
	for r := 0; r < rows; r++ {
		for j := 0; j < k; j++ {
			q[r*k+j] /= s[j]
		}
	}
	return q, nil
}

// ScaleCols returns w [rows, k] with column j multiplied by s[j].
func ScaleCols(w []float32, rows, k int, s []float32) []float32 {
	out := make([]float32, len(w))
	for r := 0; r < rows; r++ {
		for j := 0; j < k; j++ {
			out[r*k+j] = w[r*k+j] * s[j]
		}
	}
	return out
}
