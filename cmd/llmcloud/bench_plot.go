// The `bench plot` command: PNG charts of serving benchmark results (latency CDFs; for a sweep,
// throughput and latency against request rate or concurrency).

package main

import (
	"fmt"
	"io"
	"os"

	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/bench/plot"
)

func init() {
	benchModes["plot"] = runBenchPlot
}

func runBenchPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench plot", stderr)
	dir := fs.String("o", "plots", "output directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("usage: llmcloud bench plot RESULT.json... [-o DIR]")
	}
	var rs []*bench.Result
	var names []string
	for _, p := range pos {
		r, err := bench.LoadResult(p)
		if err != nil {
			return err
		}
		rs = append(rs, r)
		names = append(names, r.Name(p))
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	files, err := plot.CDFs(rs, names, *dir)
	if err != nil {
		return err
	}
	if axis := plot.SweepAxis(rs); axis != "" {
		more, err := plot.Sweep(rs, axis, *dir)
		if err != nil {
			return err
		}
		files = append(files, more...)
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return nil
}
