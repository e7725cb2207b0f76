// This file writes a Recorder as Chrome trace-event JSON ({"traceEvents": [...]}), the format
// chrome://tracing and Perfetto (https://ui.perfetto.dev) open: one "M" (metadata) event naming
// each process and each thread (a track), then one "X" (complete) event per slice with its
// start ts and duration dur in microseconds, sorted by start on each track (a slice that
// contains another comes first).
package profile

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"slices"
	"time"
)

// Event is one trace event (the fields this package writes).
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Trace is the JSON object form of a trace.
type Trace struct {
	TraceEvents     []Event `json:"traceEvents"`
	DisplayTimeUnit string  `json:"displayTimeUnit,omitempty"`
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// Sorted returns slices ordered by start, a longer slice before a shorter one starting at the
// same time (so a parent precedes its children).
func Sorted(s []Slice) []Slice {
	s = slices.Clone(s)
	slices.SortStableFunc(s, func(a, b Slice) int {
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return int(b.Dur - a.Dur)
	})
	return s
}

// Events returns r's trace events.
func (r *Recorder) Events() []Event {
	var ev []Event
	pids := map[string]int{}
	tids := map[int]int{}
	for _, t := range r.Tracks() {
		pid, ok := pids[t.Process]
		if !ok {
			pid = len(pids) + 1
			pids[t.Process] = pid
			ev = append(ev, Event{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": t.Process}},
				Event{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
		}
		tids[pid]++
		tid := tids[pid]
		ev = append(ev, Event{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": t.Name}},
			Event{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": tid}})
		for _, s := range Sorted(t.Slices()) {
			d := micros(s.Dur)
			e := Event{Name: s.Name, Cat: s.Cat, Ph: "X", Ts: micros(s.Start), Dur: &d, Pid: pid, Tid: tid}
			if s.Bytes != 0 || s.FLOPs != 0 || s.Node != "" || len(s.Args) > 0 {
				e.Args = make(map[string]any, len(s.Args)+3)
				for k, v := range s.Args {
					e.Args[k] = v
				}
				if s.Bytes != 0 {
					e.Args["bytes"] = s.Bytes
				}
				if s.FLOPs != 0 {
					e.Args["flops"] = s.FLOPs
				}
				if s.Node != "" {
					e.Args["node"] = s.Node
				}
			}
			ev = append(ev, e)
		}
	}
	return ev
}

// WriteTrace writes r as trace-event JSON to w.
func (r *Recorder) WriteTrace(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(Trace{TraceEvents: r.Events(), DisplayTimeUnit: "ns"}); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteTraceFile writes r's trace into the file path.
func (r *Recorder) WriteTraceFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteTrace(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
