// Garbage collection of the load generator.

package bench

import (
	"os"
	"runtime/debug"
)

// loadGeneratorGCPercent is the GOGC a benchmark runs with unless GOGC is set. The client's live
// heap is a few MB, so at the default of 100 the collector starts every 4 MB of allocation:
// about 7 KB per request makes that four cycles a second at 1,000 req/s, each a concurrent mark
// phase taking a quarter of the CPUs and two short stops of the world, which land in the
// latencies of the requests in flight. At 400 the cycles are four times rarer, for 4 x more
// heap (tens of MB).
const loadGeneratorGCPercent = 400

// TuneGC sets the garbage collector for a benchmark run (GOGC=400 unless the GOGC environment
// variable says otherwise) and returns a function restoring the previous setting.
func TuneGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(loadGeneratorGCPercent)
	return func() { debug.SetGCPercent(old) }
}
