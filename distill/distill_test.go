package distill

import (
	"testing"
)

func TestRepetition(t *testing.T) {
	cases := []struct {
		ids  []int
		want float64
	}{
		{[]int{1, 2, 3}, 0},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, 0},
		// 1 2 3 4 1 2 3 4: 5 four-grams, the last (1 2 3 4) repeats the first.
		{[]int{1, 2, 3, 4, 1, 2, 3, 4}, 0.2},
		// a loop of one id: every four-gram after the first repeats.
		{[]int{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, 7.0 / 8},
	}
	for _, c := range cases {
		if got := Repetition(c.ids, 4); got != c.want {
			t.Errorf("Repetition(%v) = %v, want %v", c.ids, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	in := "  Once upon a time.  \n\n\n  They played.\r\n \n"
	want := "Once upon a time.\nThey played."
	if got := Clean(in); got != want {
		t.Errorf("Clean = %q, want %q", got, want)
	}
}
