package sim

// fitCold looks for the hinge on the decodes' KV rows: a decode step whose sequences' K/V
// outgrows the caches reads it from memory, and each row past that point costs more (on the
// Zen 5 VM with the built-in model: ~0.04 µs a row, and ~0.25 µs past ~512 rows in a step). It fits the model with a hinge at thresholds from 256 rows, doubling, up to half the
// largest decode step's rows, and keeps the best if its weighted squared error is at most 0.9
// of the linear fit's (base) and its extra cost per row is positive; ok is false otherwise.
func fitCold(pts []Point, base float64) (c Coefficients, ok bool) {
	maxKV := 0.0
	for _, p := range pts {
		maxKV = max(maxKV, ShapeFeatures(p.Shape)[fDecodeKV])
	}
	best := 0.9 * base
	for from := 256.0; from <= maxKV/2; from *= 2 {
		// At least three decode points past the threshold, so that it is measured, not fitted.
		past := 0
		for _, p := range pts {
			if ShapeFeatures(p.Shape)[fDecodeKV] > from {
				past++
			}
		}
		if past < 3 {
			break
		}
		x, sse, err := fitLinear(pts, from)
		if err != nil || x[numFeatures] <= 0 || sse >= best {
			continue
		}
		best, ok = sse, true
		copy(c[:], x)
		c[cDecodeKVColdFrom] = from
	}
	return c, ok
}
