package regress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// HistoryEntry is one line of the history file (`bench regress --history FILE`): a run's
// commits, host and per-benchmark estimates, without the rounds' raw figures.
type HistoryEntry struct {
	Date        time.Time          `json:"date"`
	BaseCommit  string             `json:"base_commit"`
	HeadCommit  string             `json:"head_commit"`
	BaseRev     string             `json:"base_rev,omitempty"` // --base-commit as given
	Host        Host               `json:"host"`
	Suites      []string           `json:"suites"`
	Rounds      int                `json:"rounds"`
	Threshold   float64            `json:"threshold"`
	Confidence  float64            `json:"confidence"`
	Load        string             `json:"loadavg"` // before -> after
	Seconds     float64            `json:"seconds"`
	Benchmarks  []HistoryBenchmark `json:"benchmarks"`
	Regressions int                `json:"regressions"`
	Verdict     string             `json:"verdict"` // "no regression" or "N regression(s)"
	Injected    string             `json:"head_injected_slowdown,omitempty"`
}

// HistoryBenchmark is one benchmark's outcome in a history line.
type HistoryBenchmark struct {
	Name           string  `json:"name"`
	Unit           string  `json:"unit"`
	HigherIsBetter bool    `json:"higher_is_better,omitempty"`
	Base           float64 `json:"base_median"`
	Head           float64 `json:"head_median"`
	Ratio          float64 `json:"ratio"` // time ratio, > 1 slower (Comparison.Ratio)
	Lo             float64 `json:"ci_low"`
	Hi             float64 `json:"ci_high"`
	Verdict        string  `json:"verdict"`
}

// Host is the machine a run measured on.
type Host struct {
	CPU    string   `json:"cpu"`             // /proc/cpuinfo's model name
	Flags  []string `json:"flags,omitempty"` // its SIMD flags that the kernels dispatch on
	CPUs   int      `json:"cpus"`
	GOARCH string   `json:"goarch"`
}

// simdFlags are the /proc/cpuinfo flags recorded: the ones the kernels' speed depends on.
var simdFlags = []string{"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
	"avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16", "asimd", "sve"}

// HostInfo reads this machine's CPU model and SIMD flags (Linux; empty elsewhere).
func HostInfo() Host {
	h := Host{CPUs: runtime.NumCPU(), GOARCH: runtime.GOARCH}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return h
	}
	flagsRead := false
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k = strings.TrimSpace(k); {
		case k == "model name" && h.CPU == "":
			h.CPU = strings.TrimSpace(v)
		case (k == "flags" || k == "Features") && !flagsRead:
			flagsRead = true // the first CPU's line is the machine's
			have := strings.Fields(v)
			for _, f := range simdFlags {
				if slices.Contains(have, f) {
					h.Flags = append(h.Flags, f)
				}
			}
		}
	}
	return h
}

// History makes the run's history line.
func (r *Result) History(now time.Time, host Host) HistoryEntry {
	e := HistoryEntry{Date: now.UTC().Truncate(time.Second), BaseCommit: r.BaseCommit, HeadCommit: r.HeadCommit,
		Host: host, Suites: r.Suites, Rounds: r.Rounds, Threshold: r.Threshold, Confidence: r.Confidence,
		Load: r.LoadBefore + " -> " + r.LoadAfter, Seconds: float64(int(r.Seconds*10)) / 10,
		Regressions: r.Regressions, Verdict: "no regression", Injected: r.HeadInject}
	if r.Regressions > 0 {
		e.Verdict = fmt.Sprintf("%d regression(s)", r.Regressions)
	}
	for _, c := range r.Comparisons {
		e.Benchmarks = append(e.Benchmarks, HistoryBenchmark{Name: c.Name, Unit: c.Unit, HigherIsBetter: c.HigherIsBetter,
			Base: round4(c.BaseMedian), Head: round4(c.HeadMedian), Ratio: round4(c.Ratio), Lo: round4(c.Lo), Hi: round4(c.Hi), Verdict: c.Verdict})
	}
	return e
}

// round4 keeps 4 significant digits (the history file stays readable in a diff); infinities
// (no interval: too few rounds) become 0, which JSON can hold.
func round4(x float64) float64 {
	if x != x || x > 1e300 || x < -1e300 {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return f
}

// AppendHistory appends e to the history file at path as one JSON line, creating the file
// (and its directory) when missing.
func AppendHistory(path string, e HistoryEntry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one line, newline-terminated
	enc.SetEscapeHTML(false)     // "1.2 -> 1.3", not "-\u003e"
	if err := enc.Encode(e); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a history file's lines; a line that is not an entry is an error naming
// its number. Blank lines are skipped.
func ReadHistory(r io.Reader) ([]HistoryEntry, error) {
	var out []HistoryEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e HistoryEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("history line %d: %v", n, err)
		}
		if e.Date.IsZero() || len(e.Benchmarks) == 0 {
			return nil, fmt.Errorf("history line %d: not a bench regress entry (no date or no benchmarks)", n)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// PrintHistory writes the runs as a table, one row per run, then each benchmark's estimate
// (the time ratio, > 1 slower) across the runs, one column per run, `!` marking a regression
// and `+` a significant speed-up.
func PrintHistory(w io.Writer, entries []HistoryEntry) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "no runs recorded")
		return
	}
	short := func(c string) string {
		if c == "" {
			return "?"
		}
		if d, ok := strings.CutSuffix(c, "+dirty"); ok {
			return shortHash(d) + "+dirty"
		}
		return shortHash(c)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tdate (UTC)\tbase\thead\tsuites\trounds\tload\tcpu\tverdict\t")
	for i, e := range entries {
		verdict := e.Verdict
		if e.Injected != "" {
			verdict += " (head injected " + e.Injected + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s (%d)\t%s\t\n", i+1, e.Date.Format("2006-01-02 15:04"), short(e.BaseCommit), short(e.HeadCommit),
			strings.Join(e.Suites, ","), e.Rounds, e.Load, e.Host.CPU, e.Host.CPUs, verdict)
	}
	tw.Flush()
	for _, e := range entries[len(entries)-1:] {
		fmt.Fprintf(w, "cpu flags of run %d: %s\n", len(entries), strings.Join(e.Host.Flags, " "))
	}

	var names []string
	seen := map[string]bool{}
	for _, e := range entries {
		for _, b := range e.Benchmarks {
			if !seen[b.Name] {
				seen[b.Name] = true
				names = append(names, b.Name)
			}
		}
	}
	fmt.Fprintln(w, "\ntime ratio head/base per run (base/head of a throughput; > 1 slower; ! regression, + faster)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "benchmark\t")
	for i := range entries {
		fmt.Fprintf(tw, "%d\t", i+1)
	}
	fmt.Fprintln(tw)
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
		for _, e := range entries {
			cell := ""
			for _, b := range e.Benchmarks {
				if b.Name == n {
					cell = fmt.Sprintf("%.3f", b.Ratio)
					switch b.Verdict {
					case "regression":
						cell += "!"
					case "faster":
						cell += "+"
					}
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func shortHash(c string) string {
	if len(c) > 10 {
		return c[:10]
	}
	return c
}
