// Tests of the pipeline schedules as data: completeness, cross-stage dependencies, no deadlock,
// peak in-flight activations and the bubble, for every small grid.
package dist

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestSchedulesValidOnEveryGrid(t *testing.T) {
	for _, name := range []string{Schedule1F1B, ScheduleNaive} {
		for stages := 1; stages <= 6; stages++ {
			for micro := 1; micro <= 9; micro++ {
				s, err := NewSchedule(name, stages, micro)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(); err != nil {
					t.Fatalf("%s pp%d m%d: %v\n%s", name, stages, micro, err, s)
				}
				for st := range stages {
					want := micro
					if name == Schedule1F1B {
						want = min(stages-st, micro)
					}
					if got := s.PeakInFlight(st); got != want {
						t.Errorf("%s pp%d m%d stage %d: peak in flight %d, want %d", name, stages, micro, st, got, want)
					}
				}
				// With equal stage costs both schedules take (M+PP-1)(f+b): the bubble is
				// (PP-1)/(M+PP-1) whatever the ratio of backward to forward cost.
				for _, bwd := range []float64{1, 2, 3.5} {
					r, err := s.Simulate(1, bwd)
					if err != nil {
						t.Fatal(err)
					}
					if want := float64(micro+stages-1) * (1 + bwd); math.Abs(r.Makespan-want) > 1e-9 {
						t.Errorf("%s pp%d m%d b%.1f: makespan %.2f, want %.2f", name, stages, micro, bwd, r.Makespan, want)
					}
					if want := BubbleFraction(stages, micro); math.Abs(r.Bubble-want) > 1e-9 {
						t.Errorf("%s pp%d m%d: bubble %.4f, want %.4f", name, stages, micro, r.Bubble, want)
					}
				}
			}
		}
	}
}

func TestScheduleBadInput(t *testing.T) {
	for _, c := range []struct {
		name          string
		stages, micro int
	}{{"1f1b", 0, 4}, {"naive", 2, 0}, {"interleaved", 2, 4}} {
		if _, err := NewSchedule(c.name, c.stages, c.micro); err == nil {
			t.Errorf("NewSchedule(%q, %d, %d): no error", c.name, c.stages, c.micro)
		}
	}
}

// Broken schedules must be caught, not hang the simulation.
func TestValidateCatchesBrokenSchedules(t *testing.T) {
	mutate := map[string]func(s *Schedule){
		// stage 0 waits for micro-batch 0's gradient before sending its activation: a cycle
		// that each stage's list on its own does not show.
		"deadlock": func(s *Schedule) {
			s.Ops[0] = []Op{{Forward, 0}, {RecvGrad, 0}, {SendAct, 0}, {Backward, 0}, {Forward, 1}, {SendAct, 1}, {RecvGrad, 1}, {Backward, 1}}
		},
		"missing backward": func(s *Schedule) { s.Ops[1] = s.Ops[1][:len(s.Ops[1])-1] },
		"double forward": func(s *Schedule) {
			s.Ops[0] = append([]Op{{Forward, 0}}, s.Ops[0]...)
		},
		"out of order": func(s *Schedule) {
			s.Ops[0] = []Op{{Forward, 1}, {SendAct, 1}, {Forward, 0}, {SendAct, 0}, {RecvGrad, 0}, {Backward, 0}, {RecvGrad, 1}, {Backward, 1}}
		},
		"backward before forward": func(s *Schedule) {
			s.Ops[1] = []Op{{RecvAct, 0}, {Backward, 0}, {Forward, 0}, {SendGrad, 0}, {RecvAct, 1}, {Forward, 1}, {Backward, 1}, {SendGrad, 1}}
		},
	}
	for name, m := range mutate {
		s, err := NewSchedule(Schedule1F1B, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		m(&s)
		err = s.Validate()
		switch {
		case err == nil:
			t.Errorf("%s: Validate accepted\n%s", name, s)
		case name == "deadlock" && !strings.Contains(err.Error(), "deadlocks: stage 0 at rg0; stage 1 at ra0"):
			t.Errorf("deadlock not reported as such: %v", err)
		default:
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestReportBubble prints the bubble and per-stage memory of both schedules for a few grids
// (go test -v -run ReportBubble ./train/dist).
func TestReportBubble(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%4s %4s %8s %22s %22s\n", "PP", "M", "bubble", "1f1b peak in flight", "naive peak in flight")
	for _, pp := range []int{2, 4, 8} {
		for _, m := range []int{pp, 2 * pp, 4 * pp} {
			f, _ := NewSchedule(Schedule1F1B, pp, m)
			g, _ := NewSchedule(ScheduleNaive, pp, m)
			var fp, gp []string
			for st := range pp {
				fp = append(fp, fmt.Sprint(f.PeakInFlight(st)))
				gp = append(gp, fmt.Sprint(g.PeakInFlight(st)))
			}
			fmt.Fprintf(&b, "%4d %4d %8.3f %22s %22s\n", pp, m, BubbleFraction(pp, m), strings.Join(fp, ","), strings.Join(gp, ","))
		}
	}
	t.Log("\n" + b.String())
}

func ExampleNewSchedule() {
	s, _ := NewSchedule(Schedule1F1B, 3, 4)
	fmt.Print(s)
	// Output:
	// 1f1b: 3 stages, 4 micro-batches, bubble 0.333
	// stage 0: F0 sa0 F1 sa1 F2 sa2 rg0 B0 F3 sa3 rg1 B1 rg2 B2 rg3 B3
	// stage 1: ra0 F0 sa0 ra1 F1 sa1 rg0 B0 sg0 ra2 F2 sa2 rg1 B1 sg1 ra3 F3 sa3 rg2 B2 sg2 rg3 B3 sg3
	// stage 2: ra0 F0 B0 sg0 ra1 F1 B1 sg1 ra2 F2 B2 sg2 ra3 F3 B3 sg3
}

func TestForwardOnlySchedule(t *testing.T) {
	for stages := 1; stages <= 5; stages++ {
		for micro := 1; micro <= 6; micro++ {
			s, err := NewSchedule(ScheduleForward, stages, micro)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("pp%d m%d: %v", stages, micro, err)
			}
			r, _ := s.Simulate(1, 2)
			if want := float64(micro + stages - 1); r.Makespan != want {
				t.Errorf("pp%d m%d: makespan %v, want %v", stages, micro, r.Makespan, want)
			}
			for st := range stages {
				if s.PeakInFlight(st) != 1 {
					t.Errorf("pp%d m%d stage %d: %d slots, want 1", stages, micro, st, s.PeakInFlight(st))
				}
			}
		}
	}
}
