package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// flagNames returns the names of the flags defined in files (paths from the repository root):
// the first string literal among the first two arguments of fs.String, fs.IntVar, fs.Var, ...
// So the manifests are checked against the command's real flags, not a copy of the list.
func flagNames(t *testing.T, files ...string) map[string]bool {
	t.Helper()
	defs := map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Bool": true,
		"Float64": true, "Duration": true, "StringVar": true, "IntVar": true, "Int64Var": true,
		"Uint64Var": true, "BoolVar": true, "Float64Var": true, "DurationVar": true, "Var": true,
		"Func": true, "TextVar": true, "BoolFunc": true}
	names := map[string]bool{}
	loops := map[string][]string{} // v -> the names of `for _, v := range []string{...}`
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, filepath.Join("..", f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if r, ok := n.(*ast.RangeStmt); ok {
				// A flag defined under several names in a loop (--tensor-parallel-size, -tp).
				if v, ok := r.Value.(*ast.Ident); ok {
					if lit, ok := r.X.(*ast.CompositeLit); ok {
						loops[v.Name] = nil
						for _, e := range lit.Elts {
							if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
								if s, err := strconv.Unquote(b.Value); err == nil {
									loops[v.Name] = append(loops[v.Name], s)
								}
							}
						}
					}
				}
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !defs[sel.Sel.Name] {
				return true
			}
			for _, a := range call.Args[:min(2, len(call.Args))] {
				if id, ok := a.(*ast.Ident); ok && loops[id.Name] != nil {
					for _, s := range loops[id.Name] {
						names[s] = true
					}
					break
				}
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						names[s] = true
					}
					break
				}
			}
			return true
		})
	}
	if len(names) < 5 {
		t.Fatalf("found only %d flags in %v: has the flag code moved?", len(names), files)
	}
	return names
}

var metricName = regexp.MustCompile(`vllm:[a-z0-9_]+|llmcloud_router_[a-z0-9_]+`)

// exportedMetrics returns the metric names the server and the router register (string literals
// of their metrics files).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, f := range []string{"server/metrics.go", "router/metrics.go"} {
		src, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(vllm:[a-z0-9_]+|llmcloud_router_[a-z0-9_]+)"`).FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
	}
	if !names["vllm:num_requests_waiting"] || !names["llmcloud_router_requests_total"] {
		t.Fatalf("metric names not found in server/metrics.go and router/metrics.go: %v", names)
	}
	return names
}

// checkMetricNames fails for every metric an expression uses that nobody exports (a
// histogram's _bucket, _sum and _count series count as the histogram); it returns the names.
func checkMetricNames(t *testing.T, where, expr string, exported map[string]bool) []string {
	t.Helper()
	var used []string
	for _, m := range metricName.FindAllString(expr, -1) {
		base := m
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := cutSuffix(m, suf); ok && exported[b] {
				base = b
			}
		}
		if !exported[base] {
			t.Errorf("%s: metric %s is not exported by the server or the router", where, m)
		}
		used = append(used, base)
	}
	return used
}

func cutSuffix(s, suf string) (string, bool) {
	if len(s) > len(suf) && s[len(s)-len(suf):] == suf {
		return s[:len(s)-len(suf)], true
	}
	return s, false
}
