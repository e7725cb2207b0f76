// This file is the profile command's worker-use summary: from the pool's per-worker slices
// (category "worker", one per part of a parallel job) it reports how long each worker ran
// parts during a phase, the sum over the workers against workers x the phase's time (the share
// of the threads' time spent computing), and how long the caller sat inside a parallel op
// outside its own parts (waiting for the job's last part, or between the op's jobs).
package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/profile"
)

// workerUse is one phase's worker-use summary.
type workerUse struct {
	busy []time.Duration // per worker (0: the caller), summed parts
	// callerOut is the caller's time inside ops that ran parallel parts, outside its own parts.
	callerOut time.Duration
}

// measureWorkerUse sums the worker tracks' parts inside [from, to).
func measureWorkerUse(tracks []*profile.Track, workers int, from, to time.Duration) workerUse {
	u := workerUse{busy: make([]time.Duration, workers)}
	in := func(s profile.Slice) bool { return s.Cat == "worker" && s.Start >= from && s.End() <= to }
	var all []profile.Slice // every worker's parts in the window, by start
	var caller, ops []profile.Slice
	for _, t := range tracks {
		if t.Process != exec.ProfileProcess {
			continue
		}
		for w := 0; w < workers; w++ {
			if t.Name != exec.WorkerTrack(w) {
				continue
			}
			for _, s := range t.Slices() {
				if in(s) {
					u.busy[w] += s.Dur
					all = append(all, s)
					if w == 0 {
						caller = append(caller, s)
					}
				}
				if w == 0 && s.Cat == "op" && s.Start >= from && s.End() <= to {
					ops = append(ops, s)
				}
			}
		}
	}
	byStart := func(a []profile.Slice) {
		sort.Slice(a, func(i, j int) bool { return a[i].Start < a[j].Start })
	}
	byStart(all)
	byStart(caller)
	// Within each op: the caller's parts and whether any worker ran a part.
	for _, op := range ops {
		i := sort.Search(len(all), func(i int) bool { return all[i].Start >= op.Start })
		if i == len(all) || all[i].Start >= op.End() {
			continue // no parallel part: the op ran on the caller alone
		}
		var own time.Duration
		for j := sort.Search(len(caller), func(j int) bool { return caller[j].Start >= op.Start }); j < len(caller) && caller[j].Start < op.End(); j++ {
			own += caller[j].Dur
		}
		u.callerOut += max(0, op.Dur-own)
	}
	return u
}

// write prints u for a phase of wall time d.
func (u workerUse) write(w io.Writer, phase string, d time.Duration) {
	if len(u.busy) < 2 || d <= 0 {
		return
	}
	var parts []string
	var sum time.Duration
	for i, b := range u.busy {
		sum += b
		parts = append(parts, fmt.Sprintf("%s %.3f ms (%.0f%%)", exec.WorkerTrack(i), ms(b), 100*float64(b)/float64(d)))
	}
	fmt.Fprintf(w, "%s: workers' parts: %s; together %.1f%% of %d x the step time; the caller waited %.3f ms inside parallel ops outside its parts\n",
		phase, strings.Join(parts, ", "), 100*float64(sum)/float64(time.Duration(len(u.busy))*d), len(u.busy), ms(u.callerOut))
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
