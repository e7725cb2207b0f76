// Package profile records what a program did and when, as slices of time on tracks (a track
// is one thread of execution: a kernel worker, the engine, the scheduler), and renders the
// record two ways: Chrome trace-event JSON that Perfetto and chrome://tracing open (trace.go),
// and a table of time per op in the spirit of PyTorch Profiler's key_averages (summary.go).
//
// This file holds the Recorder. Tracks are safe for concurrent use; a track is meant to have
// one writer (its thread), so its lock is never contended.
package profile

import (
	"sync"
	"time"
)

// Slice is one span of work on a track.
type Slice struct {
	Start time.Duration // since the Recorder's start
	Dur   time.Duration
	Name  string // what ran: an op ("matmul"), an engine phase ("forward")
	Cat   string // its category: "op", "worker", "engine", ...
	// Bytes and FLOPs are the work the slice did (0: unknown), for the achieved rates.
	Bytes, FLOPs int64
	Node         string         // the graph node it ran, if any (args.node in the trace)
	Args         map[string]any // more, shown with the slice in the trace viewer
}

// End is the slice's end, since the Recorder's start.
func (s Slice) End() time.Duration { return s.Start + s.Dur }

// Recorder holds the tracks of one profile.
type Recorder struct {
	t0     time.Time
	mu     sync.Mutex
	tracks []*Track
	byKey  map[[2]string]*Track
}

// Track is one thread's slices.
type Track struct {
	Process, Name string // the trace's process and thread names
	rec           *Recorder
	mu            sync.Mutex
	slices        []Slice
}

// New starts an empty profile; slice times are measured from now.
func New() *Recorder {
	return &Recorder{t0: time.Now(), byKey: map[[2]string]*Track{}}
}

// Start is the time the profile's times are measured from.
func (r *Recorder) Start() time.Time { return r.t0 }

// Track returns the track named name in process, making it on first use. Tracks keep the
// order of their making.
func (r *Recorder) Track(process, name string) *Track {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := [2]string{process, name}
	if t := r.byKey[k]; t != nil {
		return t
	}
	t := &Track{Process: process, Name: name, rec: r}
	r.byKey[k] = t
	r.tracks = append(r.tracks, t)
	return t
}

// Tracks returns the tracks made so far.
func (r *Recorder) Tracks() []*Track {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Track(nil), r.tracks...)
}

// Add records s on t.
func (t *Track) Add(s Slice) {
	t.mu.Lock()
	t.slices = append(t.slices, s)
	t.mu.Unlock()
}

// Span records a slice from start to end (wall-clock times) named name in category cat.
func (t *Track) Span(name, cat string, start, end time.Time, args map[string]any) {
	t.Add(Slice{Start: start.Sub(t.rec.t0), Dur: end.Sub(start), Name: name, Cat: cat, Args: args})
}

// Slices returns a copy of t's slices in the order they were added.
func (t *Track) Slices() []Slice {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Slice(nil), t.slices...)
}

// Reset drops every slice recorded so far, keeping the tracks.
func (r *Recorder) Reset() {
	for _, t := range r.Tracks() {
		t.mu.Lock()
		t.slices = nil
		t.mu.Unlock()
	}
}
