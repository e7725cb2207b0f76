//go:build race

package bench

// raceEnabled: timing tests skip under the race detector, which slows the client tenfold.
const raceEnabled = true
