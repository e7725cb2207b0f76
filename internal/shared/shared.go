// Package shared finds the workplace's read-only ../shared/ directory that sits beside the
// repository. It holds optional large data (the Brown corpus, the full tokenizer vocabularies
// used only by benchmarks); everything the default test run needs ships in the repository's
// testdata/ instead (package internal/fixture). Tests that read ../shared call Path and are
// skipped, with one message shared by all of them, on machines that do not have it, and fail
// under CI=true.
package shared

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// Root returns the path of the shared directory, or "" if it cannot be found. LLMCLOUD_SHARED
// overrides the search; otherwise it is "../shared" relative to the module root (the nearest
// ancestor of the working directory that holds go.mod).
func Root() string {
	if d := os.Getenv("LLMCLOUD_SHARED"); d != "" {
		return d
	}
	r := fixture.ModuleRoot()
	if r == "" {
		return ""
	}
	s := filepath.Join(r, "..", "shared")
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return filepath.Clean(s)
	}
	return ""
}

// Path joins elem onto the shared directory and skips the test (fails it under CI=true) if the
// directory or the file is missing.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	root := Root()
	if root == "" {
		fixture.Missing(t, "optional large data: ../shared not found beside the repository (put the workplace's shared directory there or set LLMCLOUD_SHARED=<dir>)")
		return ""
	}
	p := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		fixture.Missing(t, "optional large data: %s not found in the shared directory %s", filepath.Join(elem...), root)
	}
	return p
}
