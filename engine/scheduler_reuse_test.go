package engine

import (
	"fmt"
	"reflect"
	"testing"
)

// reuseScheduler is a scheduler with n requests of prompt tokens (first id base) and 40 output
// tokens each, in a pool small enough to preempt and with prefix caching hits (every prompt
// starts with the same 32 tokens).
func reuseScheduler(t testing.TB, n, prompt int, base SeqID) *Scheduler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.MaxNumBatchedTokens, cfg.MaxModelLenTokens = 24, 96, 256
	s, err := NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addReuse(t, s, n, prompt, base)
	return s
}

func addReuse(t testing.TB, s *Scheduler, n, prompt int, base SeqID) {
	t.Helper()
	for i := range n {
		p := make([]int, prompt)
		for j := range p {
			p[j] = j + 1
			if j >= 32 {
				p[j] = (int(base)+i)*1000 + j
			}
		}
		if _, err := s.AddRequest(SeqRequest{ID: base + SeqID(i), Prompt: p, MaxTokens: 40, ArrivalTime: int64(base) + int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdateEachAsUpdateTokens: two schedulers on one workload, one updated with a map
// (UpdateTokens), the other by plan entry (UpdateEach), make the same plans and outputs at
// every step; a plan's Clone keeps its contents after the next Schedule reuses the buffers,
// and no entry's Tokens or BlockTable can be appended into the next entry's.
func TestUpdateEachAsUpdateTokens(t *testing.T) {
	a, b := reuseScheduler(t, 6, 70, 1), reuseScheduler(t, 6, 70, 1)
	var prev *StepPlan
	var prevText string
	preempted := false
	for step := 0; a.HasUnfinished(); step++ {
		pa, pb := a.Schedule(), b.Schedule()
		if prev != nil && fmt.Sprint(*prev) != prevText {
			t.Fatalf("step %d: the previous plan's clone changed:\n%s\n%v", step, prevText, *prev)
		}
		if !reflect.DeepEqual(pa.Clone(), pb.Clone()) {
			t.Fatalf("step %d: plans differ:\n%+v\n%+v", step, *pa, *pb)
		}
		preempted = preempted || len(pa.Preempted) > 0
		if len(pa.Seqs) >= 2 {
			s0, s1 := pa.Seqs[0], pa.Seqs[1]
			want := fmt.Sprint(s1.Tokens, s1.BlockTable)
			_ = append(s0.Tokens, -1)
			_ = append(s0.BlockTable, -1)
			if got := fmt.Sprint(s1.Tokens, s1.BlockTable); got != want {
				t.Fatalf("step %d: appending to entry 0 changed entry 1: %s -> %s", step, want, got)
			}
		}
		prev = pa.Clone()
		prevText = fmt.Sprint(*prev)
		sampled := map[SeqID][]int{}
		for _, ss := range pa.Seqs {
			if ss.NeedsLogits {
				sampled[ss.ID] = []int{step + int(ss.ID)}
			}
		}
		oa, err := a.UpdateTokens(pa, sampled)
		if err != nil {
			t.Fatal(err)
		}
		ob, err := b.UpdateEach(pb, func(i int) []int { return []int{step + int(pb.Seqs[i].ID)} })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(oa, ob) {
			t.Fatalf("step %d: outputs differ: %+v vs %+v", step, oa, ob)
		}
		if err := a.check(); err != nil {
			t.Fatal(err)
		}
	}
	if b.HasUnfinished() || !preempted {
		t.Fatalf("unfinished %v, preempted %v: the workload should preempt and both finish", b.HasUnfinished(), preempted)
	}
}

// TestScheduleAllocatesNothing: once its buffers have grown (a first round of requests of the
// same shape), a step — Schedule and UpdateEach — allocates nothing.
func TestScheduleAllocatesNothing(t *testing.T) {
	s := reuseScheduler(t, 2, 70, 1)
	tok := []int{7}
	each := func(int) []int { return tok }
	step := func() {
		if _, err := s.UpdateEach(s.Schedule(), each); err != nil {
			t.Fatal(err)
		}
	}
	for s.HasUnfinished() {
		step()
	}
	addReuse(t, s, 2, 70, 10)
	step() // the prefill
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("a decode step allocates %.1f times", n)
	}
}
