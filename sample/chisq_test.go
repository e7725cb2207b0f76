// Pearson's chi-square goodness-of-fit test for the statistical tests of speculative sampling:
// the p-value from the regularized upper incomplete gamma function (series below a+1, Lentz's
// continued fraction above).
package sample

import (
	"math"
	"testing"
)

// gammaQ is the regularized upper incomplete gamma function Q(a, x) for a > 0, x >= 0.
func gammaQ(a, x float64) float64 {
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		term := 1 / a
		sum := term
		for n := 1; n < 1000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-15 {
				break
			}
		}
		return max(0, 1-sum*front)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return front * h
}

// chiSquareP returns the p-value of the counts obs against the probabilities want (summing to
// 1) over sum(obs) trials. Cells with an expected count below 5 are pooled (with the smallest
// other cell if the pool stays below 5). It fails t when a cell of probability 0 has a count.
func chiSquareP(t *testing.T, obs []int, want []float64) float64 {
	t.Helper()
	n := 0
	for _, o := range obs {
		n += o
	}
	var cellsO, cellsE []float64
	var poolO, poolE float64
	for i, w := range want {
		e := w * float64(n)
		switch {
		case w == 0 && obs[i] != 0:
			t.Fatalf("cell %d of probability 0 has %d of %d", i, obs[i], n)
		case w == 0:
		case e < 5:
			poolO += float64(obs[i])
			poolE += e
		default:
			cellsO = append(cellsO, float64(obs[i]))
			cellsE = append(cellsE, e)
		}
	}
	if poolE > 0 {
		if poolE < 5 && len(cellsE) > 0 {
			j := 0
			for i := range cellsE {
				if cellsE[i] < cellsE[j] {
					j = i
				}
			}
			cellsO[j] += poolO
			cellsE[j] += poolE
		} else {
			cellsO = append(cellsO, poolO)
			cellsE = append(cellsE, poolE)
		}
	}
	if len(cellsE) < 2 {
		return 1
	}
	var stat float64
	for i := range cellsE {
		d := cellsO[i] - cellsE[i]
		stat += d * d / cellsE[i]
	}
	return gammaQ(float64(len(cellsE)-1)/2, stat/2)
}

func TestChiSquareP(t *testing.T) {
	for _, c := range []struct{ dof, x, p float64 }{
		{1, 3.841458820694124, 0.05},
		{10, 18.307038053275146, 0.05},
		{4, 13.276704135987622, 0.01},
		{30, 50.89218131151707, 0.01},
		{99, 98.33, 0.5}, // about the median
	} {
		if got := gammaQ(c.dof/2, c.x/2); math.Abs(got-c.p) > 2e-3*max(1, c.p*10) {
			t.Errorf("Q(%v/2, %v/2) = %v, want %v", c.dof, c.x, got, c.p)
		}
	}
	for _, x := range []float64{0.1, 1, 5, 30} { // two degrees of freedom: exp(-x/2)
		if got, want := gammaQ(1, x/2), math.Exp(-x/2); math.Abs(got-want) > 1e-12 {
			t.Errorf("Q(1, %v) = %v, want %v", x/2, got, want)
		}
	}
	if p := chiSquareP(t, []int{500, 500}, []float64{0.5, 0.5}); p != 1 {
		t.Errorf("perfect fit: p = %v", p)
	}
	if p := chiSquareP(t, []int{600, 400}, []float64{0.5, 0.5}); p > 1e-6 {
		t.Errorf("bad fit: p = %v", p)
	}
}
