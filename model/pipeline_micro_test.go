package model

import (
	"slices"
	"testing"
)

// microBatches cuts a batch into at most m runs of whole sequences, in order, none empty,
// with about equal tokens.
func TestMicroBatches(t *testing.T) {
	seq := func(n int) BatchSeq { return BatchSeq{Tokens: make([]int, n)} }
	for _, c := range []struct {
		lens []int
		m    int
		want [][]int // tokens per sequence, per run
	}{
		{[]int{1, 1, 1, 1}, 2, [][]int{{1, 1}, {1, 1}}},
		{[]int{1, 1, 1, 1}, 4, [][]int{{1}, {1}, {1}, {1}}},
		{[]int{1, 1, 1}, 4, [][]int{{1}, {1}, {1}}},
		{[]int{1, 1, 1, 1, 1}, 2, [][]int{{1, 1, 1}, {1, 1}}},
		{[]int{500, 1, 1, 1}, 2, [][]int{{500}, {1, 1, 1}}},
		{[]int{1, 1, 1, 500}, 2, [][]int{{1, 1, 1}, {500}}},
		{[]int{1, 1, 1, 500}, 3, [][]int{{1, 1}, {1}, {500}}},
		{[]int{7}, 4, [][]int{{7}}},
		{[]int{3, 3}, 1, [][]int{{3, 3}}},
		{[]int{3, 3}, 0, [][]int{{3, 3}}},
	} {
		var seqs []BatchSeq
		for _, n := range c.lens {
			seqs = append(seqs, seq(n))
		}
		var got [][]int
		for _, run := range microBatches(nil, seqs, c.m) {
			var ns []int
			for _, s := range run {
				ns = append(ns, len(s.Tokens))
			}
			got = append(got, ns)
		}
		if !slices.EqualFunc(got, c.want, func(a, b []int) bool { return slices.Equal(a, b) }) {
			t.Errorf("%v in %d: %v, want %v", c.lens, c.m, got, c.want)
		}
	}
}
