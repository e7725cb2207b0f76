//go:build !amd64

package kernels

// No W8A8 assembly off amd64: the Go tiles run (w8Active = w8Go).
var w8VNNI, w8AVX2 w8Kernels

// w8PeakZ is the assembly peak loop (never called here: BenchmarkW8A8Peak skips).
func w8PeakZ(iters int) {}
