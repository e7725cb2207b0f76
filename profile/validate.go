// This file checks a trace-event JSON document against the rules of the format this package
// writes (and Perfetto reads): an object with a traceEvents array; every event with a name, a
// ph of "X" or "M", numeric pid and tid; "X" events with ts and dur >= 0; "M" events naming a
// process or thread in args.name; on each thread, "X" events in start order and properly nested
// (a slice that starts inside another ends inside it).
package profile

import (
	"encoding/json"
	"fmt"
)

// Validate checks the trace data and returns the number of "X" events.
func Validate(data []byte) (int, error) {
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, fmt.Errorf("trace: %w", err)
	}
	if doc.TraceEvents == nil {
		return 0, fmt.Errorf("trace: no traceEvents array")
	}
	type span struct{ start, end float64 }
	open := map[[2]float64][]span{} // per (pid, tid): the enclosing slices
	last := map[[2]float64]float64{}
	named := map[[2]float64]bool{}
	xs := 0
	for i, e := range doc.TraceEvents {
		name, _ := e["name"].(string)
		ph, _ := e["ph"].(string)
		pid, ok1 := e["pid"].(float64)
		tid, ok2 := e["tid"].(float64)
		if name == "" || !ok1 || !ok2 {
			return 0, fmt.Errorf("trace: event %d lacks name, pid or tid: %v", i, e)
		}
		k := [2]float64{pid, tid}
		switch ph {
		case "M":
			args, _ := e["args"].(map[string]any)
			switch name {
			case "process_name", "thread_name":
				if s, _ := args["name"].(string); s == "" {
					return 0, fmt.Errorf("trace: event %d: %s without args.name", i, name)
				}
				if name == "thread_name" {
					named[k] = true
				}
			}
		case "X":
			ts, ok1 := e["ts"].(float64)
			dur, ok2 := e["dur"].(float64)
			if !ok1 || !ok2 || dur < 0 || ts < 0 {
				return 0, fmt.Errorf("trace: event %d (%s): want ts >= 0 and dur >= 0, have %v, %v", i, name, e["ts"], e["dur"])
			}
			if !named[k] {
				return 0, fmt.Errorf("trace: event %d (%s) on thread %v before its thread_name", i, name, k)
			}
			if ts < last[k] {
				return 0, fmt.Errorf("trace: event %d (%s) on thread %v starts at %v, before the previous slice (%v)", i, name, k, ts, last[k])
			}
			last[k] = ts
			st := open[k]
			// Times are microseconds with nanosecond digits: compare to within 1 ns.
			for len(st) > 0 && st[len(st)-1].end <= ts+1e-3 {
				st = st[:len(st)-1]
			}
			if len(st) > 0 && ts+dur > st[len(st)-1].end+1e-3 {
				return 0, fmt.Errorf("trace: event %d (%s) on thread %v [%v, %v] overlaps its enclosing slice ending at %v", i, name, k, ts, ts+dur, st[len(st)-1].end)
			}
			open[k] = append(st, span{ts, ts + dur})
			xs++
		default:
			return 0, fmt.Errorf("trace: event %d (%s): ph %q, want X or M", i, name, ph)
		}
	}
	return xs, nil
}
