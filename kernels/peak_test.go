package kernels

import (
	"os"
	"testing"
)

// TestPeakFLOPS is a sanity check of the measurement (positive, and more than a scalar loop
// could reach); it prints the numbers with -v. LLMCLOUD_TIMING_TESTS=1 runs it.
func TestPeakFLOPS(t *testing.T) {
	if os.Getenv("LLMCLOUD_TIMING_TESTS") == "" {
		t.Skip("timing measurement: set LLMCLOUD_TIMING_TESTS=1 on a quiet machine to run it")
	}
	if !useTrainAsm {
		t.Skip("no AVX2/FMA")
	}
	for range 3 {
		one, two := PeakFLOPS(1), PeakFLOPS(2)
		t.Logf("peak: 1 thread %.1f GFLOP/s, 2 threads %.1f GFLOP/s", one/1e9, two/1e9)
		if one < 5e9 {
			t.Errorf("1-thread peak %.1f GFLOP/s is below what the FMA loop must reach", one/1e9)
		}
	}
}
