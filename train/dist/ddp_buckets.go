// This file implements DDP with gradient buckets overlapping backward (Li et al., "PyTorch
// Distributed", VLDB 2020, section 3.2): the model's units are grouped, in the order their
// gradients become final in Backward (the head, the last block, ..., the first block, the
// embedding), into buckets of about BucketBytes; when the last unit of a bucket reports
// GradReady, the bucket's gradients are summed over the data-parallel group with an async
// allreduce while Backward goes on with the earlier layers. Wait collects every bucket before
// the optimizer runs. With gradient accumulation only the last micro-batch's Backward launches
// (the earlier ones just accumulate locally), as no_sync does in PyTorch.
package dist

import (
	"fmt"
	"sync/atomic"

	"github.com/llmcloud/llmcloud/comm"
)

// Buckets reduces a model's gradients over a data-parallel group in buckets.
type Buckets struct {
	dp      *comm.Group
	buckets []bucket
	ofUnit  []int // bucket index of each unit (-1: unit not held)
	launch  bool  // this Backward launches (the last micro-batch)
	readyN  []int // units of each bucket ready in this Backward
	pending []*comm.Work

	ended    *atomic.Bool // set when the current Backward returned (a new one per Backward)
	early    atomic.Int64 // buckets whose allreduce finished before Backward returned
	launched int64
}

type bucket struct {
	units []int
	g     []float32 // the units' gradients: one contiguous range of the flat gradient
}

// NewBuckets groups units into buckets of at least bucketBytes (the last one may be smaller).
// unitG[u] is unit u's gradient storage (nil or empty: not held), a view of flat, where held
// units lie in index order, as nn lays them out. Units become ready from the highest index
// down.
func NewBuckets(dp *comm.Group, flat []float32, unitG [][]float32, bucketBytes int) (*Buckets, error) {
	if bucketBytes <= 0 {
		return nil, fmt.Errorf("dist: bucket size %d bytes must be positive", bucketBytes)
	}
	b := &Buckets{dp: dp, ofUnit: make([]int, len(unitG))}
	var cur []int
	size := 0
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		// cur holds units in descending order; their storage runs from the lowest unit's
		// start to the highest's end.
		lo, hi := unitG[cur[len(cur)-1]], unitG[cur[0]]
		x, y := offsetOf(flat, lo), offsetOf(flat, hi)+len(hi)
		if x < 0 || x > y || y > len(flat) {
			return fmt.Errorf("dist: bucket units are not in the flat gradient buffer in order")
		}
		g := flat[x:y:y]
		for _, u := range cur {
			b.ofUnit[u] = len(b.buckets)
		}
		b.buckets = append(b.buckets, bucket{units: cur, g: g})
		cur, size = nil, 0
		return nil
	}
	for u := len(unitG) - 1; u >= 0; u-- {
		b.ofUnit[u] = -1
		if len(unitG[u]) == 0 {
			continue
		}
		cur = append(cur, u)
		size += 4 * len(unitG[u])
		if size >= bucketBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	b.readyN = make([]int, len(b.buckets))
	b.ended = &atomic.Bool{}
	return b, nil
}

// NumBuckets is the number of buckets.
func (b *Buckets) NumBuckets() int { return len(b.buckets) }

// BeginBackward is called before each Backward; last says it is the step's last micro-batch,
// whose Backward launches the allreduces.
func (b *Buckets) BeginBackward(last bool) {
	b.launch = last
	clear(b.readyN)
	b.ended = &atomic.Bool{}
}

// GradReady is the model's GradReady hook: it launches unit u's bucket once all its units are
// ready.
func (b *Buckets) GradReady(u int) {
	if !b.launch || u < 0 || u >= len(b.ofUnit) || b.ofUnit[u] < 0 {
		return
	}
	i := b.ofUnit[u]
	b.readyN[i]++
	if b.readyN[i] < len(b.buckets[i].units) {
		return
	}
	w := b.dp.AllReduceAsync(b.buckets[i].g, comm.Sum)
	b.pending = append(b.pending, w)
	b.launched++
	ended := b.ended
	go func() {
		if w.Wait() == nil && !ended.Load() {
			b.early.Add(1)
		}
	}()
}

// EndBackward is called when Backward returns.
func (b *Buckets) EndBackward() { b.ended.Store(true) }

// Wait waits for every launched bucket and returns the first error.
func (b *Buckets) Wait() error {
	var first error
	for _, w := range b.pending {
		if err := w.Wait(); err != nil && first == nil {
			first = fmt.Errorf("dist: gradient bucket allreduce: %w", err)
		}
	}
	b.pending = b.pending[:0]
	return first
}

// Overlap reports how many bucket allreduces were launched and how many of them had finished
// before the Backward that launched them returned (communication hidden behind compute).
func (b *Buckets) Overlap() (launched, finishedEarly int64) { return b.launched, b.early.Load() }
