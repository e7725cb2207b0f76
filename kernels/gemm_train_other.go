//go:build !amd64

package kernels

// useTrainAsm is false where no assembly exists; the stubs below are never called.
var useTrainAsm, useTrainAVX512 = false, false

func gemmTrain6x16(k int, a *float32, ars, aps int, b *float32, bps int, c *float32, ldc int, acc int) {
	panic("no asm")
}
func gemmTrain8x32(k int, a *float32, ars, aps int, b *float32, bps int, c *float32, ldc int, acc int) {
	panic("no asm")
}
func fmaPeak(n int) float32                                 { panic("no asm") }
func fmaPeak512(n int) float32                              { panic("no asm") }
func copyRows8(dst, src *float32, sstride, rows int)        { panic("no asm") }
func copyRows16(dst, src *float32, sstride, rows int)       { panic("no asm") }
func copyRows32(dst, src *float32, sstride, rows int)       { panic("no asm") }
func transpose8(dst, src *float32, sstride, dstride, k int) { panic("no asm") }
