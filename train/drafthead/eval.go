// This file is validation: the heads' top-1 agreement on held-out windows, with the target's
// greedy tokens (what greedy verification accepts) and with the data's tokens.
package drafthead

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/spec"
	"github.com/llmcloud/llmcloud/train"
)

// Report is a run's validation numbers.
type Report struct {
	Steps   int
	Labels  string
	Elapsed time.Duration
	Rows    int       // validation rows (hidden states)
	ValAcc  []float64 // per head: top-1 equals the target's greedy token there
	DataAcc []float64 // per head: top-1 equals the data's token
	// TargetAcc is the target's own next-token top-1 accuracy on the same rows (the ceiling
	// of DataAcc for head 0's neighbour).
	TargetAcc float64
	// MeanAccepted is the mean number of leading heads that all agree with the target's
	// greedy tokens (the drafts greedy verification would accept from that row, when the
	// prefix is the data's), over rows where every head has a label.
	MeanAccepted float64
}

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "validation over %d rows (%s labels, %d steps, %s):\n", r.Rows, r.Labels, r.Steps, r.Elapsed.Round(time.Second))
	for j := range r.ValAcc {
		fmt.Fprintf(&b, "  head %d (token t+%d): top-1 = target greedy %.1f%%, = data %.1f%%\n", j, j+2, 100*r.ValAcc[j], 100*r.DataAcc[j])
	}
	fmt.Fprintf(&b, "  target's own next token (t+1): = data %.1f%%\n", 100*r.TargetAcc)
	fmt.Fprintf(&b, "  mean accepted drafts per row (leading heads all right): %.3f of %d\n", r.MeanAccepted, len(r.ValAcc))
	return b.String()
}

// valSet is the validation windows' target outputs.
type valSet struct {
	T, K, D              int
	hidden               []float32
	byData               [][]int32
	byModel              [][]int32
	prev                 [][]int32 // per head: the token before the label (token input)
	targetOK, targetRows int
}

func newValSet(f *features, l train.Batches, windows int) (*valSet, error) {
	v := &valSet{T: f.T, K: f.K, D: f.m.Config.Dim, byData: make([][]int32, f.K), byModel: make([][]int32, f.K), prev: make([][]int32, f.K)}
	x, y := make([]int32, f.T), make([]int32, f.T)
	for range windows {
		l.Next(x, y)
		if err := f.run(x, y[len(y)-1]); err != nil {
			return nil, err
		}
		v.hidden = append(v.hidden, f.hidden...)
		for j := range f.K {
			v.byData[j] = append(v.byData[j], f.byData[j]...)
			v.byModel[j] = append(v.byModel[j], f.byModel[j]...)
			v.prev[j] = append(v.prev[j], f.prev[j]...)
		}
		for i := range f.T {
			v.targetRows++
			if int(f.greedy[i]) == f.seq[i+1] {
				v.targetOK++
			}
		}
	}
	return v, nil
}

// eval fills rep's validation numbers for head.
func (v *valSet) eval(pool *kernels.Pool, w *work, head *spec.Head, e, embd []float32, rep *Report) {
	var emb []float32
	rows := len(v.hidden) / v.D
	V := head.Vocab
	top := make([][]int32, v.K)
	rep.ValAcc, rep.DataAcc = make([]float64, v.K), make([]float64, v.K)
	for j := range v.K {
		top[j] = make([]int32, rows)
		okModel, okData, n := 0, 0, 0
		for lo := 0; lo < rows; lo += v.T {
			hi := min(lo+v.T, rows)
			emb = gatherEmb(emb, embd, v.prev[j][lo:hi], v.D)
			lossGrad(pool, w, head, j, v.hidden[lo*v.D:hi*v.D], emb, v.byModel[j][lo:hi], e, nil, nil, nil)
			for r := range hi - lo {
				row := w.logits[r*V : (r+1)*V]
				best := 0
				for t, l := range row {
					if l > row[best] {
						best = t
					}
				}
				top[j][lo+r] = int32(best)
			}
		}
		for i := range rows {
			if v.byModel[j][i] < 0 {
				continue
			}
			n++
			if top[j][i] == v.byModel[j][i] {
				okModel++
			}
			if top[j][i] == v.byData[j][i] {
				okData++
			}
		}
		rep.ValAcc[j] = float64(okModel) / float64(max(n, 1))
		rep.DataAcc[j] = float64(okData) / float64(max(n, 1))
	}
	full, acc := 0, 0
	for i := range rows {
		if v.byModel[v.K-1][i] < 0 {
			continue
		}
		full++
		for j := range v.K {
			if top[j][i] != v.byModel[j][i] {
				break
			}
			acc++
		}
	}
	rep.Rows = rows
	rep.TargetAcc = float64(v.targetOK) / float64(max(v.targetRows, 1))
	rep.MeanAccepted = float64(acc) / float64(max(full, 1))
}
