// The `bench compare` command: serving benchmark results side by side, with ratios against the
// first.

package main

import (
	"io"

	"github.com/llmcloud/llmcloud/bench"
)

func init() {
	benchModes["compare"] = runBenchCompare
}

func runBenchCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench compare", stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef("usage: llmcloud bench compare A.json [B.json ...]")
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
	bench.Compare(stdout, rs, names)
	return nil
}
