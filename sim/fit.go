// The step-time model: a step's time is linear in five features of its shape, plus a hinge on
// the decodes' KV rows (each row past a threshold costs more: the K/V no longer stays in the
// caches), fitted by least squares weighted for relative error (fit_cold.go picks the hinge).

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

// FeatureNames name the features' coefficients in the profile JSON.
var FeatureNames = [numFeatures]string{"const_s", "prefill_token_s", "prefill_attn_pair_s", "decode_seq_s", "decode_kv_token_s"}

// The hinge's two coefficients follow the features' in Coefficients.
const (
	cDecodeKVCold     = numFeatures + iota // seconds per decode KV row past the threshold
	cDecodeKVColdFrom                      // the threshold: decode KV rows in the step
	numCoefs
)

// CoefNames name every coefficient in the profile JSON: the features', then the hinge's
// (optional in a profile: without them there is no hinge).
var CoefNames = [numCoefs]string{"const_s", "prefill_token_s", "prefill_attn_pair_s", "decode_seq_s", "decode_kv_token_s",
	"decode_kv_cold_token_s", "decode_kv_cold_from_tokens"}

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

// Coefficients are the model's seconds per unit of each feature, then the hinge: seconds per
// decode KV row past the threshold, and the threshold (zero seconds: no hinge).
type Coefficients [numCoefs]float64

// Seconds predicts a step's time; never below a microsecond (a fit may go negative far from
// its points).
func (c Coefficients) Seconds(f Features) float64 {
	t := 0.0
	for i := range numFeatures {
		t += c[i] * f[i]
	}
	t += c[cDecodeKVCold] * max(0, f[fDecodeKV]-c[cDecodeKVColdFrom])
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
// 1 ms decode step weighs as much as a 100 ms prefill. The hinge on the decodes' KV rows is
// kept when some threshold lowers the weighted error by a tenth or more (fitCold).
func Fit(pts []Point) (Coefficients, error) {
	var c Coefficients
	if len(pts) < numFeatures {
		return c, fmt.Errorf("sim: fit: %d points for %d coefficients", len(pts), numFeatures)
	}
	for _, p := range pts {
		if p.Seconds <= 0 {
			return c, fmt.Errorf("sim: fit: a point of %v s", p.Seconds)
		}
	}
	x, sse, err := fitLinear(pts, -1)
	if err != nil {
		return c, err
	}
	copy(c[:], x)
	if cold, ok := fitCold(pts, sse); ok {
		c = cold
	}
	return c, nil
}

// fitLinear fits the features (and, with from >= 0, the hinge past from KV rows) to pts by
// weighted least squares, returning the coefficients and the weighted squared error.
func fitLinear(pts []Point, from float64) ([]float64, float64, error) {
	n := numFeatures
	if from >= 0 {
		n++
	}
	row := func(p Point) []float64 {
		f := ShapeFeatures(p.Shape)
		if from < 0 {
			return f[:]
		}
		return append(f[:], max(0, f[fDecodeKV]-from))
	}
	// Normal equations A^T W A x = A^T W t, with W = 1/t^2.
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n+1)
	}
	for _, p := range pts {
		f := row(p)
		w := 1 / (p.Seconds * p.Seconds)
		for i := range n {
			for j := range n {
				m[i][j] += w * f[i] * f[j]
			}
			m[i][n] += w * f[i] * p.Seconds
		}
	}
	// A feature no point exercises (all zero) gets coefficient 0: pin its row.
	for i := range n {
		if m[i][i] == 0 {
			m[i][i] = 1
		}
	}
	x, err := solve(m)
	if err != nil {
		return nil, 0, err
	}
	sse := 0.0
	for _, p := range pts {
		f, pred := row(p), 0.0
		for i := range n {
			pred += x[i] * f[i]
		}
		sse += (pred - p.Seconds) * (pred - p.Seconds) / (p.Seconds * p.Seconds)
	}
	return x, sse, nil
}

// solve runs Gaussian elimination with partial pivoting on the augmented n x (n+1) matrix m
// (modified in place).
func solve(m [][]float64) ([]float64, error) {
	n := len(m)
	x := make([]float64, n)
	// Scale columns so the pivots are comparable (features span 1 to 1e6).
	scale := make([]float64, n)
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
