package bench

import (
	"os"
	"runtime/debug"
	"testing"
)

// TuneGC raises GOGC for the run and puts the old value back, unless GOGC is set.
func TestTuneGC(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: TuneGC leaves it alone")
	}
	old := debug.SetGCPercent(123)
	defer debug.SetGCPercent(old)
	restore := TuneGC()
	if got := debug.SetGCPercent(loadGeneratorGCPercent); got != loadGeneratorGCPercent {
		t.Errorf("GOGC during the run %d, want %d", got, loadGeneratorGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Errorf("GOGC after the run %d, want 123 back", got)
	}
}
