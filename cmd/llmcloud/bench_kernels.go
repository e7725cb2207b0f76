// The `bench kernels` command: one round of the fixed kernel suite (perf/kernelbench), as a
// table or as the JSON `bench regress` reads.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"
	"time"

	"github.com/llmcloud/llmcloud/perf/kernelbench"
)

func init() {
	benchModes["kernels"] = runBenchKernels
}

func runBenchKernels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench kernels", stderr)
	threads := fs.Int("threads", 1, "matmul pool workers")
	ops := fs.Int("ops", 200, "ops of each benchmark timed one by one (after 3 untimed); the 10th percentile counts")
	filter := fs.String("filter", "", "run only the benchmarks whose name matches this regular expression")
	asJSON := fs.Bool("json", false, "print the result as JSON (what bench regress reads)")
	list := fs.Bool("list", false, "list the benchmarks and exit")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *threads < 1 || *ops < 1:
		return usagef("--threads and --ops must be positive")
	}
	if *list {
		for _, n := range kernelbench.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	o := kernelbench.Options{Threads: *threads, Ops: *ops}
	if *filter != "" {
		if o.Filter, err = regexp.Compile(*filter); err != nil {
			return usagef("--filter: %v", err)
		}
	}
	res, err := kernelbench.Run(o)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if res.Injected != "" {
		fmt.Fprintf(stdout, "this binary has an injected slowdown: %s\n", res.Injected)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\ttime/op\tops\tGB/s\t")
	for _, b := range res.Benchmarks {
		gbs := ""
		if b.BytesPerOp > 0 {
			gbs = fmt.Sprintf("%.2f", float64(b.BytesPerOp)/b.NsPerOp)
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%s\t\n", b.Name, time.Duration(b.NsPerOp).Round(10*time.Nanosecond), b.Ops, gbs)
	}
	return tw.Flush()
}
