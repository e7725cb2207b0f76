//go:build race

package exec_test

// raceEnabled: allocation counts are not meaningful under the race detector (sync.Pool drops
// items at random there).
const raceEnabled = true
