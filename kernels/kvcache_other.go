//go:build !amd64

package kernels

var kvAsm = false

func kvLoadAsm(f KVFormat, dst []float32, src []byte, r0, n, off, hd int) bool { return false }
