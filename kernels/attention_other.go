//go:build !amd64

package kernels

var attnAsm = false

func attnScores4(q, k *float32, stride, hd, nb int, scale float32, out *float32) {
	panic("no asm")
}

func attnPV(out, p, v *float32, stride, hd, nb int) { panic("no asm") }
