package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
)

// TestFitRecovers measures a synthetic engine whose step time is a known linear function of
// the shape plus 2% noise: the fit recovers the coefficients within a few percent and its
// held-out error is near the noise.
func TestFitRecovers(t *testing.T) {
	want := Coefficients{3e-4, 1.5e-4, 2e-7, 2e-4, 1e-6}
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(s engine.StepShape) (time.Duration, error) {
		sec := want.Seconds(ShapeFeatures(s)) * (1 + 0.02*(2*rng.Float64()-1))
		return time.Duration(sec * 1e9), nil
	}
	cfg := engine.DefaultConfig()
	cfg.MaxModelLenTokens = 2048
	pts, err := Measure(run, Grid(cfg, false), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	train, held := Split(pts)
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
