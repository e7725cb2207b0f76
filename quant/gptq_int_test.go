package quant

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/format/hfquant"
)

// TestIntMethodsBeatRTN: on the integer group grid of HF checkpoints (4-bit g128, 8-bit g32,
// per-row 4-bit), GPTQ (with and without act-order) and AWQ's search have clearly smaller
// output error on the calibration activations than round-to-nearest on the same grid (a
// method that degrades to RTN fails).
func TestIntMethodsBeatRTN(t *testing.T) {
	p := newProblem(3, 32, 512, 384)
	for _, c := range []struct {
		g               IntGrid
		maxGPTQ, maxAWQ float64
	}{
		{IntGrid{Bits: 4, Group: 128, MinZero: 1}, 0.4, 0.7},
		{IntGrid{Bits: 4, Group: 128}, 0.4, 0.7},
		{IntGrid{Bits: 8, Group: 32, MinZero: 1}, 0.4, 0.7},
		{IntGrid{Bits: 4, Group: -1}, 0.4, 0.7},
	} {
		errOf := func(w []float32) float64 {
			e, err := outputErr(p.w, w, p.x, p.rows, p.k, p.n)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		r, err := RTNInt(p.w, p.rows, p.k, c.g)
		if err != nil {
			t.Fatal(err)
		}
		rtn := errOf(r.Float32())
		res := map[string]float64{}
		for _, act := range []bool{false, true} {
			l, err := GPTQInt(p.w, p.rows, p.k, p.h, c.g, GPTQIntOptions{ActOrder: act})
			if err != nil {
				t.Fatal(err)
			}
			checkLinear(t, l, c.g, act)
			name := "gptq"
			if act {
				name = "gptq act-order"
			}
			res[name] = errOf(l.Float32())
			if res[name] > c.maxGPTQ*rtn {
				t.Errorf("%+v %s: output error %.4g is not below %.2f x RTN's %.4g", c.g, name, res[name], c.maxGPTQ, rtn)
			}
		}
		aw, err := AWQSearchRound([][]float32{p.w}, []int{p.rows}, []Rounder{IntRounder(c.g)}, p.k, p.abs, p.x, 0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(aw.ErrRTN-rtn) > 1e-6*rtn {
			t.Errorf("%+v: awq's alpha=0 error %g is not RTN's %g", c.g, aw.ErrRTN, rtn)
		}
		if aw.Err > c.maxAWQ*rtn {
			t.Errorf("%+v awq: output error %.4g is not below %.2f x RTN's %.4g (alpha %.2f)", c.g, aw.Err, c.maxAWQ, rtn, aw.Alpha)
		}
		t.Logf("%+v: RTN %.4g, gptq %.3f, gptq act-order %.3f, awq %.3f (alpha %.2f) of RTN", c.g, rtn,
			res["gptq"]/rtn, res["gptq act-order"]/rtn, aw.Err/rtn, aw.Alpha)
	}
}

// checkLinear checks a GPTQInt result: codes and zeros on the grid, g_idx a partition of the
// columns into groups of G (act-order) or absent.
func checkLinear(t *testing.T, l *hfquant.Linear, g IntGrid, act bool) {
	t.Helper()
	maxq := 1<<g.Bits - 1
	for _, c := range l.Codes {
		if int(c) > maxq {
			t.Fatalf("code %d above %d", c, maxq)
		}
	}
	for _, z := range l.Zeros {
		if int(z) < g.MinZero || int(z) > maxq {
			t.Fatalf("zero %d outside [%d, %d]", z, g.MinZero, maxq)
		}
	}
	if !act {
		if l.GIdx != nil {
			t.Fatal("g_idx without act-order")
		}
		return
	}
	if len(l.GIdx) != l.In {
		t.Fatalf("g_idx of %d for %d columns", len(l.GIdx), l.In)
	}
	n := make([]int, l.Groups())
	for _, gi := range l.GIdx {
		n[gi]++
	}
	for gi, c := range n {
		if c != l.Group {
			t.Fatalf("group %d has %d columns, want %d", gi, c, l.Group)
		}
	}
}
