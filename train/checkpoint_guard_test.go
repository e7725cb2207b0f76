// Tests of what a resume refuses: a "latest" file naming a path outside the run directory,
// trainer.json fields out of range, and checkpoint files whose bytes changed.
package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLatestOutsideRunRefused(t *testing.T) {
	run := t.TempDir()
	for _, bad := range []string{"../../../../etc", "ckpt/../../x", "/etc", "ckpt/a/b", "..", "ckpt/..", "", "a\\..\\b"} {
		os.WriteFile(filepath.Join(run, latestFile), []byte(bad+"\n"), 0o644)
		_, err := ResolveCheckpoint("latest", run)
		if err == nil || !strings.Contains(err.Error(), "not a checkpoint directory inside the run directory") {
			t.Errorf("latest %q: %v", bad, err)
		}
	}
	for _, good := range []string{"ckpt/step-00000010", "step-00000010"} {
		os.WriteFile(filepath.Join(run, latestFile), []byte(good+"\n"), 0o644)
		dir, err := ResolveCheckpoint("latest", run)
		if err != nil || dir != filepath.Join(run, good) {
			t.Errorf("latest %q: %q, %v", good, dir, err)
		}
	}
}
