//go:build !amd64

package kernels

var attnAsm = false

func attnPV(out, p, v *float32, stride, hd, nb int) { panic("no asm") }
