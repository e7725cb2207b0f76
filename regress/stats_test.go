package regress

import (
	"math"
	"testing"
)

func TestSignedRankCritical(t *testing.T) {
	// Critical values of the two-sided Wilcoxon signed-rank test (published tables).
	for _, c := range []struct {
		n     int
		alpha float64
		crit  int
	}{
		{5, 0.05, -1}, // P(T+ = 0) = 1/32 > 0.025: no 95% interval from 5 values
		{6, 0.05, 0},
		{10, 0.05, 8},
		{20, 0.05, 52},
		{20, 0.01, 37},
	} {
		if got := signedRankCritical(c.n, c.alpha); got != c.crit {
			t.Errorf("signedRankCritical(%d, %g) = %d, want %d", c.n, c.alpha, got, c.crit)
		}
	}
	if got := MinRounds(0.05 / 14); got != 10 {
		t.Errorf("MinRounds(0.05/14) = %d, want 10 (2·2^-9 = 0.0039 > 0.0036)", got)
	}
}

func TestRatioCIAndVerdict(t *testing.T) {
	r := []float64{1.12, 1.08, 1.11, 0.98, 1.10, 1.15, 1.09, 1.13, 1.07, 1.10}
	est, lo, hi := ratioCI(r, 0.05)
	if !(est > 1.09 && est < 1.11 && lo > 1 && lo < est && hi > est && hi < 1.15) {
		t.Fatalf("ratioCI = %v [%v, %v], want about 1.10 in an interval above 1 below 1.15", est, lo, hi)
	}
	if v := verdict(est, lo, hi, 0.05); v != "regression" {
		t.Errorf("verdict = %q, want regression", v)
	}
	if v := verdict(est, lo, hi, 0.15); v != "~" {
		t.Errorf("under the threshold: verdict = %q, want ~", v)
	}
	if v := verdict(1.2, 0.99, 1.3, 0.05); v != "~" {
		t.Errorf("interval holds 1: verdict = %q, want ~", v)
	}
	if v := verdict(0.8, 0.7, 0.9, 0.05); v != "faster" {
		t.Errorf("verdict = %q, want faster", v)
	}
	if _, lo, hi := ratioCI(r[:3], 0.05); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
		t.Errorf("3 rounds: interval [%v, %v], want unbounded", lo, hi)
	}
	// One negative log ratio of the smallest magnitude among 10: T- = 1, P(T+ <= 1) = 2/1024.
	d := make([]float64, 10)
	for i := range d {
		d[i] = math.Log(r[i])
	}
	if p := signedRankP(d); math.Abs(p-4.0/1024) > 1e-12 {
		t.Errorf("signed-rank p = %v, want %v", p, 4.0/1024)
	}
}
