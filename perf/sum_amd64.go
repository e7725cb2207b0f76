package perf

import "github.com/llmcloud/llmcloud/internal/cpuid"

//go:noescape
func sumAVX2(p *float32, n int) float32

//go:noescape
func sum4AVX2(p *float32, stride int, n int) float32

//go:noescape
func sum8AVX2(p *float32, stride int, n int) float32

// hasAVX2 reports AVX2 with the OS saving YMM state.
var hasAVX2 = func() bool {
	maxLeaf, _, _, _ := cpuid.CPUID(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, c1, _ := cpuid.CPUID(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c1&osxsave == 0 || c1&avx == 0 || cpuid.XGETBV()&6 != 6 {
		return false
	}
	_, b7, _, _ := cpuid.CPUID(7, 0)
	return b7&(1<<5) != 0
}()

// sum adds the values of x (a streaming read).
func sum(x []float32) float32 {
	n := len(x) &^ 31
	var s float32
	if hasAVX2 && n > 0 {
		s = sumAVX2(&x[0], n)
	} else {
		n = 0
	}
	return s + sumGo(x[n:])
}

// sum4 adds the values of x read as four streams side by side, one per quarter of x.
func sum4(x []float32) float32 {
	q := len(x) / 4 &^ 15
	var s float32
	if hasAVX2 && q > 0 {
		s = sum4AVX2(&x[0], 4*q, q)
	} else {
		q = 0
	}
	return s + sumGo(x[4*q:])
}

// sum8 adds the values of x read as eight streams side by side, one per eighth of x.
func sum8(x []float32) float32 {
	q := len(x) / 8 &^ 7
	var s float32
	if hasAVX2 && q > 0 {
		s = sum8AVX2(&x[0], 4*q, q)
	} else {
		q = 0
	}
	return s + sumGo(x[8*q:])
}
