// Compare: results side by side, each number with its ratio to the first result's.

package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Name is how a result is titled in tables and legends: its label, else its file's base name.
func (r *Result) Name(path string) string {
	if r.Label != "" {
		return r.Label
	}
	return strings.TrimSuffix(filepath.Base(path), ".json")
}

// compareRows lists the metrics a comparison shows, in order, for the keys the results have.
func compareRows(rs []*Result) []string {
	rows := []string{"completed", "failed", "duration", "request_throughput", "request_goodput",
		"output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"}
	for _, m := range MetricNames {
		rows = append(rows, "mean_"+m+"_ms", "median_"+m+"_ms")
		var ps []float64
		for _, r := range rs {
			for k := range r.Stats {
				if s, ok := strings.CutPrefix(k, "p"); ok && strings.HasSuffix(k, "_"+m+"_ms") {
					if p, err := strconv.ParseFloat(strings.TrimSuffix(s, "_"+m+"_ms"), 64); err == nil && !slices.Contains(ps, p) {
						ps = append(ps, p)
					}
				}
			}
		}
		slices.Sort(ps)
		for _, p := range ps {
			rows = append(rows, "p"+PercentileWord(p)+"_"+m+"_ms")
		}
	}
	return rows
}

var countRows = map[string]bool{"completed": true, "failed": true, "max_concurrent_requests": true}

// Compare writes a Markdown table: one row per metric, one column per result; every column
// after the first shows its value and the ratio to the first ("x1.25").
func Compare(w io.Writer, rs []*Result, names []string) {
	header := append([]string{"metric"}, names...)
	table := [][]string{header}
	for _, row := range compareRows(rs) {
		cells := []string{row}
		base, baseOK := rs[0].Metric(row)
		any := false
		for i, r := range rs {
			v, ok := r.Metric(row)
			if !ok {
				cells = append(cells, "-")
				continue
			}
			any = true
			s := strconv.FormatFloat(v, 'f', 2, 64)
			if countRows[row] {
				s = strconv.FormatFloat(v, 'f', 0, 64)
			}
			if i > 0 && baseOK && base != 0 {
				s += fmt.Sprintf(" (x%.2f)", v/base)
			}
			cells = append(cells, s)
		}
		if any {
			table = append(table, cells)
		}
	}
	widths := make([]int, len(header))
	for _, r := range table {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for k, r := range table {
		var sb strings.Builder
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&sb, "| %-*s ", widths[i], c)
			} else {
				fmt.Fprintf(&sb, "| %*s ", widths[i], c)
			}
		}
		fmt.Fprintln(w, sb.String()+"|")
		if k == 0 {
			sb.Reset()
			for i := range r {
				if i == 0 {
					sb.WriteString("| " + strings.Repeat("-", widths[i]) + " ")
				} else {
					sb.WriteString("| " + strings.Repeat("-", widths[i]-1) + ": ")
				}
			}
			fmt.Fprintln(w, sb.String()+"|")
		}
	}
}
