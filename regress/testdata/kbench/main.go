// Command kbench is the smallest binary that runs `bench kernels --json` as llmcloud does, for
// package regress's tests: linking it takes a second where llmcloud takes ten or more. Usage:
// kbench bench kernels --json --threads N --ops N [--filter RE]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/llmcloud/llmcloud/perf/kernelbench"
)

func main() {
	if len(os.Args) < 3 || os.Args[1] != "bench" || os.Args[2] != "kernels" {
		fmt.Fprintln(os.Stderr, "usage: kbench bench kernels --json [--threads N] [--ops N] [--filter RE]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("kbench", flag.ExitOnError)
	fs.Bool("json", true, "JSON output (always)")
	threads := fs.Int("threads", 1, "")
	ops := fs.Int("ops", 200, "")
	filter := fs.String("filter", "", "")
	fs.Parse(os.Args[3:])
	o := kernelbench.Options{Threads: *threads, Ops: *ops}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintln(os.Stderr, "--filter:", err)
			os.Exit(2)
		}
		o.Filter = re
	}
	res, err := kernelbench.Run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}
