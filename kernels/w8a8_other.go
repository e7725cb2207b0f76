//go:build !amd64

package kernels

// No W8A8 assembly off amd64: the Go tiles run (w8Active = w8Go).
var w8VNNI, w8AVX2 w8Kernels
