//go:build !amd64

package kernels

// useQuantAsm: no assembly kernels on this architecture; the plain-Go references run.
func useQuantAsm() {}
