//go:build !amd64

package perf

// sum adds the values of x (a streaming read).
func sum(x []float32) float32 { return sumGo(x) }

// sum4 adds the values of x (the four-stream read of the AVX2 path; one stream here).
func sum4(x []float32) float32 { return sumGo(x) }

// hasAVX2 is false where the sums are plain Go.
const hasAVX2 = false

// sum8 adds the values of x (the eight-stream read of the AVX2 path; one stream here).
func sum8(x []float32) float32 { return sumGo(x) }
