// Package shared finds the workplace's read-only ../shared/ directory (models, reference outputs,
// data) that sits beside the repository. Tests that read it call Dir and are skipped, with a
// message, on machines that do not have it.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns the path of the shared directory, or "" if it cannot be found. LLMCLOUD_SHARED
// overrides the search; otherwise it is "../shared" relative to the module root (the nearest
// ancestor of the working directory that holds go.mod).
func Root() string {
	if d := os.Getenv("LLMCLOUD_SHARED"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "..", "shared")
			if fi, err := os.Stat(s); err == nil && fi.IsDir() {
				return filepath.Clean(s)
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Path joins elem onto the shared directory and skips the test if the directory or the file
// is missing.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	root := Root()
	if root == "" {
		t.Skip("../shared not found (set LLMCLOUD_SHARED); skipping test that needs shared models/reference data")
	}
	p := filepath.Join(append([]string{root}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared file %s not present: %v", p, err)
	}
	return p
}
