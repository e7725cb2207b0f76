package train

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestNonFiniteWhy(t *testing.T) {
	for _, c := range []struct {
		loss, norm float64
		want       string
	}{{1.5, 2, ""}, {math.NaN(), 2, "loss NaN"}, {1, math.Inf(1), "grad_norm +Inf"},
		{math.Inf(-1), math.NaN(), "loss -Inf, grad_norm NaN"}} {
		if got := nonFinite(c.loss, c.norm); got != c.want {
			t.Errorf("nonFinite(%v, %v) = %q, want %q", c.loss, c.norm, got, c.want)
		}
	}
}

// A record with NaN and Inf values marshals, naming the fields that held them.
func TestRecordSanitize(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	r := Record{Step: 7, Loss: &nan, ValLoss: &inf, GradNorm: nan, ValPPL: inf, LR: 0.1}
	r.sanitize()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"step":7`, `"lr":0.1`, `"loss=NaN"`, `"val_loss=+Inf"`, `"grad_norm=NaN"`, `"val_ppl=+Inf"`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	if strings.Contains(s, `"loss":`) || strings.Contains(s, `"val_loss":`) {
		t.Errorf("non-finite values kept: %s", s)
	}
}
