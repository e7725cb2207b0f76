// The report of `llmcloud bench structured`: totals over the schema files and MaskBench's
// table (schemas, passing, compile errors, validation and invalidation errors, then mask and
// compile time percentiles in µs), plus the most common compile errors.
package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// structuredSummary is the table as data (the --json output's "summary").
type structuredSummary struct {
	Tokenizer          string             `json:"tokenizer"`
	Whitespace         bool               `json:"whitespace"`
	Threads            int                `json:"threads"`
	WallSeconds        float64            `json:"wall_seconds"`
	Schemas            int                `json:"schemas"`
	Passing            int                `json:"passing"`
	CompileErrors      int                `json:"compile_errors"` // timeouts and crashes included
	Timeouts           int                `json:"timeouts"`
	Crashes            int                `json:"crashes"`
	ValidationErrors   int                `json:"validation_errors"`   // valid instances rejected
	InvalidationErrors int                `json:"invalidation_errors"` // invalid instances accepted
	SchemasFailing     int                `json:"schemas_failing"`     // compiled, some test wrong
	Tests              int                `json:"tests"`
	Tokens             int                `json:"tokens"`
	MaskUS             map[string]float64 `json:"mask_us"`
	CompileUS          map[string]float64 `json:"compile_us"`
	TopCompileErrors   []errorCount       `json:"top_compile_errors"`
	BySource           []sourceRow        `json:"by_source"`
	SlowestMasks       []slowSchema       `json:"slowest_masks"` // the schemas with the slowest single mask
}

type slowSchema struct {
	File      string  `json:"file"`
	MaskMaxUS float64 `json:"mask_max_us"`
	MaskSumUS float64 `json:"mask_sum_us"`
	Tokens    int     `json:"tokens"`
}

// sourceRow counts the schemas of one source (the file name's prefix: Github_hard, BFCL_java).
type sourceRow struct {
	Source             string `json:"source"`
	Schemas            int    `json:"schemas"`
	Passing            int    `json:"passing"`
	CompileErrors      int    `json:"compile_errors"`
	ValidationErrors   int    `json:"validation_errors"`
	InvalidationErrors int    `json:"invalidation_errors"`
}

// sourceOf is the source a MaskBench file name starts with: "Github_hard---o1234.json" and
// "BFCL_java_12.json" are from Github_hard and BFCL_java.
func sourceOf(name string) string {
	if i := strings.Index(name, "---"); i > 0 {
		return name[:i]
	}
	name = strings.TrimSuffix(name, ".json")
	if i := strings.LastIndexByte(name, '_'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		return name[:i]
	}
	return name
}

type errorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// percentileNames are the table's rows, in order.
var percentileNames = []string{"avg", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "p100"}

func summarizeStructured(results []*schemaResult) *structuredSummary {
	s := &structuredSummary{Schemas: len(results)}
	var masks, compiles []float64
	errs := map[string]int{}
	bySource := map[string]*sourceRow{}
	for _, r := range results {
		src := bySource[sourceOf(r.File)]
		if src == nil {
			src = &sourceRow{Source: sourceOf(r.File)}
			bySource[src.Source] = src
		}
		src.Schemas++
		src.ValidationErrors += r.ValidationErrors
		src.InvalidationErrors += r.InvalidationErrors
		switch r.Status {
		case "pass":
			s.Passing++
			src.Passing++
		case "fail":
			s.SchemasFailing++
		case "timeout":
			s.Timeouts++
		case "crash":
			s.Crashes++
		}
		switch r.Status {
		case "compile_error", "timeout", "crash":
			s.CompileErrors++
			src.CompileErrors++
			errs[errorKey(r.Error)]++
		default:
			compiles = append(compiles, r.CompileUS)
		}
		s.ValidationErrors += r.ValidationErrors
		s.InvalidationErrors += r.InvalidationErrors
		s.Tests += r.Tests
		s.Tokens += len(r.maskNS)
		for _, ns := range r.maskNS {
			masks = append(masks, float64(ns)/1e3)
		}
	}
	s.MaskUS, s.CompileUS = percentiles(masks), percentiles(compiles)
	for e, n := range errs {
		s.TopCompileErrors = append(s.TopCompileErrors, errorCount{e, n})
	}
	sort.Slice(s.TopCompileErrors, func(i, j int) bool {
		a, b := s.TopCompileErrors[i], s.TopCompileErrors[j]
		return a.Count > b.Count || a.Count == b.Count && a.Error < b.Error
	})
	if len(s.TopCompileErrors) > 15 {
		s.TopCompileErrors = s.TopCompileErrors[:15]
	}
	for _, r := range results {
		if r.Tokens > 0 {
			s.SlowestMasks = append(s.SlowestMasks, slowSchema{r.File, r.MaskMaxUS, r.MaskSumUS, r.Tokens})
		}
	}
	sort.Slice(s.SlowestMasks, func(i, j int) bool { return s.SlowestMasks[i].MaskMaxUS > s.SlowestMasks[j].MaskMaxUS })
	if len(s.SlowestMasks) > 10 {
		s.SlowestMasks = s.SlowestMasks[:10]
	}
	for _, row := range bySource {
		s.BySource = append(s.BySource, *row)
	}
	sort.Slice(s.BySource, func(i, j int) bool { return s.BySource[i].Source < s.BySource[j].Source })
	return s
}

// errorKey groups compile errors that differ only in a value: JSON pointers (at #/...),
// quoted strings after the first (which usually names the keyword) and numbers are elided.
func errorKey(msg string) string {
	msg = errPointer.ReplaceAllString(msg, "#…")
	n := 0
	msg = errQuoted.ReplaceAllStringFunc(msg, func(q string) string {
		if n++; n == 1 {
			return q
		}
		return `"…"`
	})
	return clipN(errNumber.ReplaceAllString(msg, "N"), 120)
}

var (
	errPointer = regexp.MustCompile(`#(?:/[^ ]*[^ :,;)])?`)
	errQuoted  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	errNumber  = regexp.MustCompile(`\b[0-9]+(?:\.[0-9]+)?\b`)
)

// percentiles returns avg and the nearest-rank percentiles of xs (nil if empty).
func percentiles(xs []float64) map[string]float64 {
	if len(xs) == 0 {
		return nil
	}
	sort.Float64s(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	out := map[string]float64{"avg": sum / float64(len(xs))}
	for _, name := range percentileNames[1:] {
		var q float64
		fmt.Sscanf(name, "p%g", &q)
		i := int(q/100*float64(len(xs))+0.5) - 1
		i = max(0, min(i, len(xs)-1))
		out[name] = xs[i]
	}
	return out
}

func writeStructuredTable(w io.Writer, s *structuredSummary) {
	row := func(metric, value string) { fmt.Fprintf(w, "| %-22s | %12s |\n", metric, value) }
	fmt.Fprintf(w, "| %-22s | %12s |\n", "metric", "llmcloud")
	fmt.Fprintf(w, "|:%s|%s:|\n", strings.Repeat("-", 23), strings.Repeat("-", 13))
	row("schemas", commas(float64(s.Schemas)))
	row("passing", commas(float64(s.Passing)))
	row("compile error", commas(float64(s.CompileErrors)))
	row("  of which timeout", commas(float64(s.Timeouts)))
	row("  of which crash", commas(float64(s.Crashes)))
	row("validation error", commas(float64(s.ValidationErrors)))
	row("invalidation error", commas(float64(s.InvalidationErrors)))
	row("tests", commas(float64(s.Tests)))
	row("tokens", commas(float64(s.Tokens)))
	for _, p := range percentileNames {
		row("mask µs "+p, pctString(s.MaskUS, p))
	}
	for _, p := range percentileNames {
		row("compile µs "+p, pctString(s.CompileUS, p))
	}
	fmt.Fprintf(w, "\n(%d threads, white space %v, %.1f s wall; mask = time to compute one full-vocabulary mask, compile = JSON Schema to compiled grammar)\n",
		s.Threads, s.Whitespace, s.WallSeconds)
	if len(s.BySource) > 1 {
		fmt.Fprintf(w, "\n| %-22s | %7s | %7s | %13s | %16s | %18s |\n", "source", "schemas", "passing", "compile error", "validation error", "invalidation error")
		fmt.Fprintf(w, "|:%s|%s:|%s:|%s:|%s:|%s:|\n", strings.Repeat("-", 23), strings.Repeat("-", 8), strings.Repeat("-", 8),
			strings.Repeat("-", 14), strings.Repeat("-", 17), strings.Repeat("-", 19))
		for _, r := range s.BySource {
			fmt.Fprintf(w, "| %-22s | %7d | %7d | %13d | %16d | %18d |\n", r.Source, r.Schemas, r.Passing, r.CompileErrors, r.ValidationErrors, r.InvalidationErrors)
		}
	}
	if len(s.SlowestMasks) > 0 {
		fmt.Fprintln(w, "\nslowest masks (µs: the slowest one, all of the schema's; tokens):")
		for _, r := range s.SlowestMasks[:min(5, len(s.SlowestMasks))] {
			fmt.Fprintf(w, "%12s %12s %7d  %s\n", commas(r.MaskMaxUS), commas(r.MaskSumUS), r.Tokens, r.File)
		}
	}
	if len(s.TopCompileErrors) > 0 {
		fmt.Fprintln(w, "\nmost common compile errors:")
		for _, e := range s.TopCompileErrors {
			fmt.Fprintf(w, "%7d  %s\n", e.Count, e.Error)
		}
	}
}

func pctString(m map[string]float64, p string) string {
	if m == nil {
		return "-"
	}
	v := m[p]
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return commas(v)
}

// commas writes x rounded to an integer with thousands separators.
func commas(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
