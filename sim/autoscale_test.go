package sim

import (
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/bench"
)

// TestAutoscale: a burst that overloads one replica makes the autoscaler add replicas (ready
// after the start delay), which lowers the TTFT against a fixed single replica; the quiet
// tail after it scales back down.
func TestAutoscale(t *testing.T) {
	burst, err := Requests(Dataset{Name: "random", RandomInputLen: 256, RandomOutputLen: 32}, 1500, 40, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tail, err := Requests(Dataset{Name: "random", RandomInputLen: 256, RandomOutputLen: 32}, 60, 0.5, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	end := burst[len(burst)-1].At
	for _, r := range tail {
		r.At += end + int64(time.Second)
		burst = append(burst, r)
	}
	cfg := autoscale.Config{Metric: autoscale.MetricWaiting, Target: 2, MinReplicas: 1, MaxReplicas: 8,
		ScaleUpCooldown: 5 * time.Second, ScaleDownCooldown: 20 * time.Second}
	p99 := func(o Options) (float64, *Outcome) {
		out, err := Simulate(o, burst)
		if err != nil {
			t.Fatal(err)
		}
		var res bench.Result
		out.Fill(&res, nil, []float64{99})
		if res.Failed != 0 {
			t.Fatalf("%d failed: %v", res.Failed, res.FailureReasons)
		}
		return res.Stats["p99_ttft_ms"], out
	}
	fixed, _ := p99(Options{Profile: testProfile(), Replicas: 1, Router: "least-load"})
	scaled, out := p99(Options{Profile: testProfile(), Replicas: 1, Router: "least-load", Autoscale: &cfg,
		AutoscaleInterval: time.Second, StartDelay: 2 * time.Second})
	var up, down bool
	for _, e := range out.Scaling {
		up = up || e.After > e.Before
		down = down || e.After < e.Before && up
	}
	if !up || !down {
		t.Errorf("scaling events %+v: want a scale-up then a scale-down", out.Scaling)
	}
	used := map[int32]bool{}
	for _, k := range out.Replica {
		used[k] = true
	}
	if len(used) < 2 {
		t.Errorf("requests went to %d replicas", len(used))
	}
	if scaled >= fixed {
		t.Errorf("p99 TTFT %v ms with the autoscaler, %v ms on one replica", scaled, fixed)
	}
	t.Logf("p99 TTFT %.0f ms fixed, %.0f ms autoscaled; %d scaling events", fixed, scaled, len(out.Scaling))
}
