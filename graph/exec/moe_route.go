// This file routes a row of the moe op (moe.go) to its experts: the router's logits to
// probabilities (softmax, or per-expert sigmoid), the selection scores (plus the selection
// bias, and with grouped top-k only the best groups), the top k experts and their weights.

package exec

import "math"

// route picks a row's experts into sel and their weights into wts.
func (o *moeOp) route(logits []float32, sel []int, wts []float32) {
	s := o.scores
	if o.sigmoid {
		for i, v := range logits {
			s[i] = 1 / (1 + math.Exp(-float64(v)))
		}
	} else {
		m := math.Inf(-1)
		for _, v := range logits {
			m = math.Max(m, float64(v))
		}
		var sum float64
		for i, v := range logits {
			s[i] = math.Exp(float64(v) - m)
			sum += s[i]
		}
		for i := range s {
			s[i] /= sum
		}
	}
	c := s
	if o.bias != nil || o.groups > 1 {
		c = o.choose(s)
	}
	var total float64
	for j := range sel {
		best := -1
		for i, v := range c {
			if taken(sel[:j], i) {
				continue
			}
			if best < 0 || v > c[best] {
				best = i
			}
		}
		sel[j] = best
		total += s[best]
	}
	for j, e := range sel {
		w := s[e]
		if o.norm {
			w /= total
		}
		wts[j] = float32(w * o.scale)
	}
}

// choose returns the scores the experts are chosen on: s plus the selection bias, and with
// grouped top-k -Inf outside the groupsUsed groups whose groupTop best scores sum highest
// (ties: the lower group).
func (o *moeOp) choose(s []float64) []float64 {
	c := o.choice
	for i, v := range s {
		c[i] = v
		if o.bias != nil {
			c[i] += float64(o.bias[i])
		}
	}
	if o.groups <= 1 {
		return c
	}
	size := len(c) / o.groups
	var gs [64]float64
	var top [8]float64
	gsc := gs[:0]
	if o.groups > len(gs) {
		gsc = make([]float64, 0, o.groups)
	}
	for g := 0; g < o.groups; g++ {
		t := top[:0]
		if o.groupTop > len(top) {
			t = make([]float64, 0, o.groupTop)
		}
		for _, v := range c[g*size : (g+1)*size] { // keep the groupTop largest, descending
			if len(t) < o.groupTop {
				t = append(t, v)
			} else if v > t[len(t)-1] {
				t[len(t)-1] = v
			} else {
				continue
			}
			for j := len(t) - 1; j > 0 && t[j] > t[j-1]; j-- {
				t[j], t[j-1] = t[j-1], t[j]
			}
		}
		var sum float64
		for _, v := range t {
			sum += v
		}
		gsc = append(gsc, sum)
	}
	for g := range gsc { // rank of group g: the groups before it in (score desc, index asc)
		rank := 0
		for h, v := range gsc {
			if v > gsc[g] || (v == gsc[g] && h < g) {
				rank++
			}
		}
		if rank >= o.groupsUsed {
			for i := g * size; i < (g+1)*size; i++ {
				c[i] = math.Inf(-1)
			}
		}
	}
	return c
}

func taken(sel []int, i int) bool {
	for _, e := range sel {
		if e == i {
			return true
		}
	}
	return false
}
