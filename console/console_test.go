package console

import (
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestRingKeepsTheNewest(t *testing.T) {
	var r Ring
	if got := r.Last(10); len(got) != 0 {
		t.Fatalf("empty ring: %d traces", len(got))
	}
	for i := range MaxLimit + 7 {
		r.Add(Trace{ID: strconv.Itoa(i), ArrivalUnix: float64(i)})
	}
	if r.Total() != MaxLimit+7 {
		t.Fatalf("total %d", r.Total())
	}
	got := r.Last(3)
	for i, want := range []string{"506", "505", "504"} {
		if got[i].ID != want {
			t.Fatalf("Last(3)[%d] = %s, want %s", i, got[i].ID, want)
		}
	}
	all := r.Last(10000)
	if len(all) != MaxLimit || all[len(all)-1].ID != "7" {
		t.Fatalf("Last(all): %d traces, oldest %s; want %d, oldest 7", len(all), all[len(all)-1].ID, MaxLimit)
	}
}

func TestMergeNewestFirstByFinish(t *testing.T) {
	a := []Trace{{ID: "a1", ArrivalUnix: 10, E2EMs: 5000}, {ID: "a0", ArrivalUnix: 1, E2EMs: 1}} // finish 15, 1.001
	b := []Trace{{ID: "b0", ArrivalUnix: 12, E2EMs: 0}}                                          // finish 12
	got := Merge(2, a, b)
	if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "b0" {
		t.Fatalf("Merge = %+v", got)
	}
	if got := Merge(5); got == nil || len(got) != 0 {
		t.Fatalf("Merge of nothing = %#v, want an empty list", got)
	}
}

func TestLimit(t *testing.T) {
	for q, want := range map[string]int{"": DefaultLimit, "?limit=3": 3, "?limit=100000": MaxLimit} {
		n, err := Limit(httptest.NewRequest("GET", "/x"+q, nil))
		if err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", q, n, err, want)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=x"} {
		if _, err := Limit(httptest.NewRequest("GET", "/x"+q, nil)); err == nil {
			t.Errorf("%q: no error", q)
		}
	}
}

// BenchmarkRingAdd is what a replica pays per finished request for the console's traces.
func BenchmarkRingAdd(b *testing.B) {
	var r Ring
	t := Trace{ID: "chatcmpl-0123456789abcdef", Model: "stories15M", ArrivalUnix: 1.7e9, QueueMs: 1, PrefillMs: 30,
		DecodeMs: 200, E2EMs: 231, PromptTokens: 12, OutputTokens: 40, FinishReason: "stop"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Add(t)
		}
	})
}
