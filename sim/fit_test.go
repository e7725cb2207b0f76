package sim

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
)

// TestFitRecovers measures a synthetic engine whose step time is a known linear function of
// the shape plus 2% noise: the fit recovers the coefficients within a few percent and its
// held-out error is near the noise.
func TestFitRecovers(t *testing.T) {
	want := Coefficients{3e-4, 1.5e-4, 2e-7, 2e-4, 1e-6}
	train, held := measureSynthetic(t, want, 1)
	if len(held) == 0 || len(train) < 3*len(held) {
		t.Fatalf("split %d/%d", len(train), len(held))
	}
	got, err := Fit(train)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 0.1*want[i] {
			t.Errorf("%s = %.4g, want %.4g", FeatureNames[i], got[i], want[i])
		}
	}
	if e := Errors(got, held)["all"]; e.MaxRel > 0.05 {
		t.Errorf("held-out error %+v with 2%% noise", e)
	}
}

// TestFitColdHinge measures a synthetic engine whose decode KV rows cost five times more past
// 2,048 rows in a step (the K/V outgrowing the caches), plus 2% noise: the fit finds the
// hinge at 2,048 rows and its cost within 15%, and a profile saved with it predicts the same
// after loading.
func TestFitColdHinge(t *testing.T) {
	want := Coefficients{3e-4, 1.5e-4, 2e-7, 2e-4, 1e-7, 4e-7, 2048}
	train, held := measureSynthetic(t, want, 3)
	got, err := Fit(train)
	if err != nil {
		t.Fatal(err)
	}
	if got[cDecodeKVColdFrom] != 2048 || math.Abs(got[cDecodeKVCold]-want[cDecodeKVCold]) > 0.15*want[cDecodeKVCold] {
		t.Errorf("hinge: %.4g s a row past %v rows, want %.4g past %v", got[cDecodeKVCold], got[cDecodeKVColdFrom], want[cDecodeKVCold], want[cDecodeKVColdFrom])
	}
	if e := Errors(got, held)["all"]; e.MaxRel > 0.05 {
		t.Errorf("held-out error %+v with 2%% noise", e)
	}
	// Without the hinge the same points fit worse: the hinge is what the test measures.
	lin, _, err := fitLinear(train, -1)
	if err != nil {
		t.Fatal(err)
	}
	var linC Coefficients
	copy(linC[:], lin)
	if e := Errors(linC, held)["all"]; e.MaxRel < 0.1 {
		t.Errorf("a linear fit's held-out error is %+v: the hinge is not exercised", e)
	}
	var p Profile
	p.Version = ProfileVersion
	p.Engine = FromEngine(synthConfig())
	p.SetCoefficients(got)
	path := filepath.Join(t.TempDir(), "p.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	q, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Coef() != got {
		t.Errorf("loaded %v, saved %v", q.Coef(), got)
	}
}

// synthConfig is the engine configuration of the synthetic measurements.
func synthConfig() engine.Config {
	cfg := engine.DefaultConfig()
	cfg.MaxModelLenTokens = 2048
	return cfg
}

// measureSynthetic measures the grid of synthConfig on an engine whose step time is want's
// prediction plus 2% noise, and splits the points into fit and held-out.
func measureSynthetic(t *testing.T, want Coefficients, seed uint64) (train, held []Point) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	run := func(s engine.StepShape) (time.Duration, error) {
		sec := want.Seconds(ShapeFeatures(s)) * (1 + 0.02*(2*rng.Float64()-1))
		return time.Duration(sec * 1e9), nil
	}
	pts, err := Measure(run, Grid(synthConfig(), false), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	return Split(pts)
}

// TestFitTooFewPoints: fewer points than coefficients is an error, not a garbage model.
func TestFitTooFewPoints(t *testing.T) {
	if _, err := Fit([]Point{{Shape: engine.StepShape{Decode: []int{5}}, Seconds: 1e-3}}); err == nil {
		t.Fatal("fit of one point succeeded")
	}
}

// TestPlanFeatures: a plan's features agree with the shape it stands for.
func TestPlanFeatures(t *testing.T) {
	plan := &engine.StepPlan{Seqs: []engine.ScheduledSeq{
		{Tokens: make([]int, 100), StartPos: 32, Prefill: true},
		{Tokens: []int{1}, StartPos: 70},
		{Tokens: []int{1}, StartPos: 9},
	}}
	shape := engine.StepShape{Prefill: []engine.Chunk{{Tokens: 100, Context: 32}}, Decode: []int{70, 9}}
	if PlanFeatures(plan) != ShapeFeatures(shape) {
		t.Fatalf("plan %v, shape %v", PlanFeatures(plan), ShapeFeatures(shape))
	}
}
