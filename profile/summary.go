// This file sums slices by name into a table like PyTorch Profiler's key_averages: per op the
// calls, the self time (the slice's time less that of the kept slices nested in it on its
// track) in total and on average, its share of all self time, and the rates it achieved from
// the bytes it moved and the floating-point operations it did.
package profile

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Row is one name's line of a Table.
type Row struct {
	Name         string
	Calls        int
	Self         time.Duration
	Bytes, FLOPs int64
}

// Avg is the mean self time of a call.
func (r Row) Avg() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return r.Self / time.Duration(r.Calls)
}

// GBps is the bytes moved per second of self time, in 1e9 bytes.
func (r Row) GBps() float64 { return rate(r.Bytes, r.Self) }

// GFLOPs is the floating-point operations per second of self time, in 1e9.
func (r Row) GFLOPs() float64 { return rate(r.FLOPs, r.Self) }

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e9
}

// Table is a summary: rows by self time, most first.
type Table struct {
	Rows []Row
	Self time.Duration // the sum of the rows' self times
}

// Summarize builds the table of the slices keep accepts, on every track.
func Summarize(tracks []*Track, keep func(*Track, Slice) bool) Table {
	byName := map[string]*Row{}
	var t Table
	for _, tr := range tracks {
		var ss []Slice
		for _, s := range tr.Slices() {
			if keep(tr, s) {
				ss = append(ss, s)
			}
		}
		for _, x := range selfTimes(Sorted(ss)) {
			r := byName[x.Name]
			if r == nil {
				r = &Row{Name: x.Name}
				byName[x.Name] = r
			}
			r.Calls++
			r.Self += x.Dur
			r.Bytes += x.Bytes
			r.FLOPs += x.FLOPs
			t.Self += x.Dur
		}
	}
	for _, r := range byName {
		t.Rows = append(t.Rows, *r)
	}
	slices.SortFunc(t.Rows, func(a, b Row) int {
		if a.Self != b.Self {
			return int(b.Self - a.Self)
		}
		return cmpString(a.Name, b.Name)
	})
	return t
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// selfTimes returns sorted slices (parents before children) with Dur replaced by self time:
// each slice's duration less its direct children's.
func selfTimes(ss []Slice) []Slice {
	out := slices.Clone(ss)
	var stack []int
	for i, s := range ss {
		for len(stack) > 0 && ss[stack[len(stack)-1]].End() <= s.Start {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			out[stack[len(stack)-1]].Dur -= min(s.Dur, ss[stack[len(stack)-1]].End()-s.Start)
		}
		stack = append(stack, i)
	}
	return out
}

// Write prints the table: op, calls, self total (ms), self average (µs), share of the total
// self time, GB/s and GFLOP/s achieved.
func (t Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcalls\tself ms\tavg µs\tself %\tGB/s\tGFLOP/s\t")
	for _, r := range t.Rows {
		share := 0.0
		if t.Self > 0 {
			share = 100 * float64(r.Self) / float64(t.Self)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t%.1f\t%s\t%s\t\n", r.Name, r.Calls, ms(r.Self), float64(r.Avg().Nanoseconds())/1e3,
			share, rateText(r.Bytes, r.GBps()), rateText(r.FLOPs, r.GFLOPs()))
	}
	fmt.Fprintf(tw, "total\t\t%.3f\t\t100.0\t\t\t\n", ms(t.Self))
	return tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func rateText(n int64, r float64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}
