package perf

// sumGo is the portable sum with eight partial sums.
func sumGo(x []float32) float32 {
	var s [8]float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		s[0] += x[i]
		s[1] += x[i+1]
		s[2] += x[i+2]
		s[3] += x[i+3]
		s[4] += x[i+4]
		s[5] += x[i+5]
		s[6] += x[i+6]
		s[7] += x[i+7]
	}
	for ; i < len(x); i++ {
		s[0] += x[i]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
