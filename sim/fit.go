// The step-time model: a step's time is linear in five features of its shape, fitted by
// least squares weighted for relative error.

package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/llmcloud/llmcloud/engine"
)

// Features of a step, in Coefficients order.
const (
	fConst       = iota // 1: the step's fixed cost (scheduling, launching the forward)
	fPrefillTok         // prompt tokens run (rows of every matmul)
	fPrefillAttn        // sum over prefill chunks of tokens x (context + tokens/2): query-key pairs
	fDecodeSeqs         // decode sequences (one row and one sampled token each)
	fDecodeKV           // sum of the decode sequences' context lengths: KV rows read
	numFeatures
)

// FeatureNames name the coefficients in the profile JSON.
var FeatureNames = [numFeatures]string{"const_s", "prefill_token_s", "prefill_attn_pair_s", "decode_seq_s", "decode_kv_token_s"}

// Features are a step's inputs to the model.
type Features [numFeatures]float64

// ShapeFeatures returns the features of a step shape.
func ShapeFeatures(s engine.StepShape) Features {
	var f Features
	f[fConst] = 1
	for _, c := range s.Prefill {
		f[fPrefillTok] += float64(c.Tokens)
		f[fPrefillAttn] += float64(c.Tokens) * (float64(c.Context) + float64(c.Tokens)/2)
	}
	for _, ctx := range s.Decode {
		f[fDecodeSeqs]++
		f[fDecodeKV] += float64(ctx)
	}
	return f
}

// PlanFeatures returns the features of a scheduler's plan (an entry with more than one
// token, or a prefill flag, is a prefill chunk; a one-token entry is a decode).
func PlanFeatures(p *engine.StepPlan) Features {
	var f Features
	f[fConst] = 1
	for i := range p.Seqs {
		ss := &p.Seqs[i]
		n := float64(len(ss.Tokens))
		if ss.Prefill {
			f[fPrefillTok] += n
			f[fPrefillAttn] += n * (float64(ss.StartPos) + n/2)
		} else {
			f[fDecodeSeqs]++
			f[fDecodeKV] += float64(ss.StartPos)
		}
	}
	return f
}

// Coefficients are the model's seconds per unit of each feature.
type Coefficients [numFeatures]float64

// Seconds predicts a step's time; never below a microsecond (a fit may go negative far from
// its points).
func (c Coefficients) Seconds(f Features) float64 {
	t := 0.0
	for i := range c {
		t += c[i] * f[i]
	}
	return max(t, 1e-6)
}

// Point is one measured step shape.
type Point struct {
	Phase   string           `json:"phase"` // prefill, decode or mixed
	Shape   engine.StepShape `json:"shape"`
	Seconds float64          `json:"seconds"` // the median of the repetitions
}

// phaseOf names the phase of a shape.
func phaseOf(s engine.StepShape) string {
	switch {
	case len(s.Prefill) > 0 && len(s.Decode) > 0:
		return "mixed"
	case len(s.Prefill) > 0:
		return "prefill"
	}
	return "decode"
}

// Fit solves the least-squares problem min sum ((pred-t)/t)^2 over pts: relative error, so a
// 1 ms decode step weighs as much as a 100 ms prefill.
func Fit(pts []Point) (Coefficients, error) {
	var c Coefficients
	if len(pts) < numFeatures {
		return c, fmt.Errorf("sim: fit: %d points for %d coefficients", len(pts), numFeatures)
	}
	// Normal equations A^T W A x = A^T W t, with W = 1/t^2.
	var ata [numFeatures][numFeatures + 1]float64
	for _, p := range pts {
		if p.Seconds <= 0 {
			return c, fmt.Errorf("sim: fit: a point of %v s", p.Seconds)
		}
		f := ShapeFeatures(p.Shape)
		w := 1 / (p.Seconds * p.Seconds)
		for i := range numFeatures {
			for j := range numFeatures {
				ata[i][j] += w * f[i] * f[j]
			}
			ata[i][numFeatures] += w * f[i] * p.Seconds
		}
	}
	// A feature no point exercises (all zero) gets coefficient 0: pin its row.
	for i := range numFeatures {
		if ata[i][i] == 0 {
			ata[i][i] = 1
		}
	}
	x, err := solve(ata)
	if err != nil {
		return c, err
	}
	copy(c[:], x[:])
	return c, nil
}

// solve runs Gaussian elimination with partial pivoting on the augmented matrix m.
func solve(m [numFeatures][numFeatures + 1]float64) ([numFeatures]float64, error) {
	const n = numFeatures
	var x [n]float64
	// Scale columns so the pivots are comparable (features span 1 to 1e6).
	var scale [n]float64
	for j := range n {
		scale[j] = math.Sqrt(m[j][j])
	}
	for i := range n {
		for j := range n {
			m[i][j] /= scale[i] * scale[j]
		}
		m[i][n] /= scale[i]
	}
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[p][col]) {
				p = r
			}
		}
		if math.Abs(m[p][col]) < 1e-12 {
			return x, errors.New("sim: fit: the grid does not determine the model (singular system)")
		}
		m[col], m[p] = m[p], m[col]
		for r := range n {
			if r == col {
				continue
			}
			k := m[r][col] / m[col][col]
			for j := col; j <= n; j++ {
				m[r][j] -= k * m[col][j]
			}
		}
	}
	for i := range n {
		x[i] = m[i][n] / m[i][i] / scale[i]
	}
	return x, nil
}

// ErrorStats is how far a fit's predictions are from measured points, relative to the points.
type ErrorStats struct {
	Points  int     `json:"points"`
	MeanRel float64 `json:"mean_rel_error"`
	MaxRel  float64 `json:"max_rel_error"`
}

// Errors returns c's relative error on pts, overall ("all") and per phase.
func Errors(c Coefficients, pts []Point) map[string]ErrorStats {
	out := map[string]ErrorStats{}
	add := func(k string, e float64) {
		s := out[k]
		s.MeanRel = (s.MeanRel*float64(s.Points) + e) / float64(s.Points+1)
		s.Points++
		s.MaxRel = max(s.MaxRel, e)
		out[k] = s
	}
	for _, p := range pts {
		e := math.Abs(c.Seconds(ShapeFeatures(p.Shape))-p.Seconds) / p.Seconds
		add("all", e)
		add(p.Phase, e)
	}
	return out
}

// median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
