// The compile command: llmcloud compile [MODEL] [--dump before|after|passes] [--svg FILE]
// [--dot FILE] [--batch 1,512] builds MODEL's graph (anything `llmcloud inspect` accepts; none:
// the built-in default model), runs the passes serving runs (graph.ServingPipeline), and prints
// node counts by op at every stage, what each pass did, and the planned activation memory
// (one arena, buffers reused by liveness) against the unplanned sum for each batch size.
// --dump prints the IR text; --svg draws the compiled graph with Graphviz's dot.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llmcloud/llmcloud/graph"
)

func init() {
	register("compile", "build a model's graph, run the compiler passes, report node counts, fusions and planned memory (--dump IR, --svg drawing)", runCompile)
}

func runCompile(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compile", stderr)
	dump := fs.String("dump", "", "print the IR text: before (the built graph), after (the compiled graph) or passes (before and after every pass)")
	svg := fs.String("svg", "", "draw the compiled graph as SVG into FILE (needs Graphviz's dot)")
	dotFile := fs.String("dot", "", "write the compiled graph in Graphviz's DOT language into FILE")
	batch := fs.String("batch", "1,512", "batch sizes n (rows) to plan activation memory for, comma-separated")
	logitRows := fs.Int("logit-rows", 1, "rows whose logits are wanted (the graph's s)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud compile [MODEL] [--dump before|after|passes] [--svg FILE] [--dot FILE] [--batch N,...]")
		fmt.Fprintln(stderr, "MODEL: a GGUF file, a Hugging Face directory or a llama2.c .bin (default: the built-in default model)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch *dump {
	case "", "before", "after", "passes":
	default:
		return usagef("--dump %q: want before, after or passes", *dump)
	}
	var sizes []int
	for _, f := range strings.Split(*batch, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return usagef("--batch %q: want positive integers separated by commas", *batch)
		}
		sizes = append(sizes, n)
	}
	if *logitRows < 1 {
		return usagef("--logit-rows must be at least 1")
	}
	b, err := openModelArg(pos, stderr)
	if err != nil {
		return err
	}
	g, err := b.Model.Graph()
	c := b.Model.Config
	b.Close()
	if err != nil {
		return fmt.Errorf("%s: building the graph: %w", b.Path, err)
	}
	out, stages, err := graph.RunPasses(g, graph.ServingPipeline()...)
	if err != nil {
		return err
	}

	switch *dump {
	case "before":
		graph.Print(stdout, g)
	case "after":
		graph.Print(stdout, out)
	case "passes":
		fmt.Fprintln(stdout, "# built")
		graph.Print(stdout, g)
		for _, s := range stages {
			fmt.Fprintf(stdout, "# after pass %s (%s)\n", s.Pass, s.Stats)
			graph.Print(stdout, s.After)
		}
	}
	fmt.Fprintf(stdout, "%s: %s, dim %d, %d layers, %d heads (%d kv), ffn %d, vocab %d; graph: %d inputs, %d weights\n",
		b.Path, c.Arch, c.Dim, c.Layers, c.Heads, c.KVHeads, c.FFN, c.Vocab, len(g.Inputs), len(g.Weights))
	printOpCounts(stdout, g, stages)
	for _, s := range stages {
		fmt.Fprintf(stdout, "pass %s: %d -> %d nodes; %s\n", s.Pass, s.NodesBefore, s.NodesAfter, s.Stats)
	}
	if err := printMemory(stdout, g, out, sizes, *logitRows); err != nil {
		return err
	}

	if *dotFile != "" || *svg != "" {
		var d bytes.Buffer
		if err := graph.WriteDOT(&d, out); err != nil {
			return err
		}
		if *dotFile != "" {
			if err := os.WriteFile(*dotFile, d.Bytes(), 0o644); err != nil {
				return err
			}
		}
		if *svg != "" {
			if err := drawSVG(d.Bytes(), *svg); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "drew the compiled graph into %s\n", *svg)
		}
	}
	return nil
}

// printOpCounts prints nodes by op, one column per stage (the built graph, then after each
// pass).
func printOpCounts(w io.Writer, g *graph.Graph, stages []graph.Stage) {
	graphs := []*graph.Graph{g}
	header := "op\tbuilt"
	for _, s := range stages {
		graphs = append(graphs, s.After)
		header += "\t" + s.Pass
	}
	counts := make([]map[string]int, len(graphs))
	ops := map[string]bool{}
	for i, h := range graphs {
		counts[i] = h.OpCounts()
		for op := range counts[i] {
			ops[op] = true
		}
	}
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header+"\t")
	for _, op := range names {
		fmt.Fprint(tw, op)
		for i := range graphs {
			fmt.Fprintf(tw, "\t%d", counts[i][op])
		}
		fmt.Fprintln(tw, "\t")
	}
	fmt.Fprint(tw, "nodes")
	for _, h := range graphs {
		fmt.Fprintf(tw, "\t%d", len(h.Nodes))
	}
	fmt.Fprintln(tw, "\t")
	tw.Flush()
}

// printMemory prints the planned activation arena of the built and the compiled graph for
// each batch size, against the unplanned sum (every result its own buffer).
func printMemory(w io.Writer, built, compiled *graph.Graph, sizes []int, s int) error {
	fmt.Fprintf(w, "activation memory (one arena, buffers reused by liveness; s=%d logit rows):\n", s)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "n\tgraph\tplanned\tunplanned\tratio\tvalues\tin place\t")
	for _, n := range sizes {
		env := map[string]int{"n": n, "s": s}
		for _, h := range []struct {
			name string
			g    *graph.Graph
		}{{"built", built}, {"compiled", compiled}} {
			p, err := graph.PlanMemory(h.g, env)
			if err != nil {
				return err
			}
			if err := graph.CheckPlan(h.g, p); err != nil {
				return fmt.Errorf("the memory plan is wrong (a bug): %w", err)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1fx\t%d\t%d\t\n", n, h.name, byteSize(p.Peak), byteSize(p.Unplanned),
				float64(p.Unplanned)/float64(max(p.Peak, 1)), p.Values, p.Aliased)
		}
	}
	return tw.Flush()
}

// byteSize is n bytes in KiB/MiB/GiB with the exact count.
func byteSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s (%d B)", v, units[u], n)
}

// drawSVG runs Graphviz's dot on a DOT text.
func drawSVG(dot []byte, file string) error {
	bin, err := exec.LookPath("dot")
	if err != nil {
		return errors.New("--svg needs Graphviz's dot, which is not on PATH: install graphviz (e.g. `apt-get install graphviz`), or write the DOT text with --dot FILE")
	}
	cmd := exec.Command(bin, "-Tsvg", "-o", file)
	cmd.Stdin = bytes.NewReader(dot)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -Tsvg: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	return nil
}
