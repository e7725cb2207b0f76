package sim

import (
	"testing"
)

// BenchmarkSimulate simulates 20,000 chat-like requests on 20 replicas (about 1 request per
// replica at a time, so nearly every request's tokens are steps of their own: the worst case
// for the simulator's cost per request).
func BenchmarkSimulate(b *testing.B) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 256, RandomOutputLen: 64}, 20000, 200, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out, err := Simulate(Options{Profile: testProfile(), Replicas: 20}, reqs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(out.Steps)/float64(len(reqs)), "steps/req")
	}
}

// BenchmarkSimulateLoaded: 50,000 chat-like requests on 50 replicas at 90% of their capacity
// on the default model's profile shape (testProfile).
func BenchmarkSimulateLoaded(b *testing.B) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 256, RandomOutputLen: 64}, 50000, 500, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out, err := Simulate(Options{Profile: testProfile(), Replicas: 50}, reqs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(out.Steps)/float64(len(reqs)), "steps/req")
	}
}

// BenchmarkSimulateScale: the Scale run of docs/simulate.md at a tenth of its length — 1,000
// replicas at 10 chat-like requests/s each (90% of their capacity), 100,000 requests — where
// the replicas' state no longer fits the CPU caches.
func BenchmarkSimulateScale(b *testing.B) {
	reqs, err := Requests(Dataset{Name: "random", RandomInputLen: 256, RandomOutputLen: 64}, 100000, 10000, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out, err := Simulate(Options{Profile: testProfile(), Replicas: 1000}, reqs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(out.Steps)/float64(len(reqs)), "steps/req")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(out.Steps), "ns/step")
	}
}
