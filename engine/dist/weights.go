// This file is what each rank reports of its weights at setup (RankWeights): the bytes its
// forward binds and how many of them are resident in it, measured by the rank itself
// (model.Model.WeightResident), gathered to rank 0 for its log and /metrics.
package dist

import (
	"encoding/binary"
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
)

// RankWeights is one rank's weights as it measured them when the group was set up.
type RankWeights struct {
	Rank  int
	Bound int64 // bytes of the weights its forward binds (model.Model.WeightBytes)
	// Resident are the model file's pages and the rank's copies of its weights resident in
	// the process (model.WeightResidency); -1 each when the rank could not measure them.
	File, Copies int64
}

// Resident is all of the rank's resident weight bytes (-1: unknown).
func (w RankWeights) Resident() int64 {
	if w.File < 0 {
		return -1
	}
	return w.File + w.Copies
}

const weightsRecord = 24

// MeasureWeights is m's RankWeights as rank measures them now.
func MeasureWeights(rank int, m *model.Model) RankWeights {
	w := RankWeights{Rank: rank, Bound: m.WeightBytes(), File: -1, Copies: -1}
	if r, err := m.WeightResident(); err == nil {
		w.File, w.Copies = r.File, r.Copies
	}
	return w
}

// gatherWeights sends this rank's RankWeights to rank 0 on g, which gets every rank's.
func gatherWeights(g *comm.Group, m *model.Model) ([]RankWeights, error) {
	me := MeasureWeights(g.Rank(), m)
	src := make([]byte, weightsRecord)
	for i, v := range []int64{me.Bound, me.File, me.Copies} {
		binary.LittleEndian.PutUint64(src[8*i:], uint64(v))
	}
	var dst []byte
	if g.Rank() == 0 {
		dst = make([]byte, g.Size()*weightsRecord)
	}
	if err := g.Gather(dst, src, 0); err != nil {
		return nil, fmt.Errorf("dist: the ranks' weight bytes: %w", err)
	}
	if g.Rank() != 0 {
		return nil, nil
	}
	ws := make([]RankWeights, g.Size())
	for r := range ws {
		b := dst[r*weightsRecord:]
		ws[r] = RankWeights{Rank: r, Bound: int64(binary.LittleEndian.Uint64(b)),
			File: int64(binary.LittleEndian.Uint64(b[8:])), Copies: int64(binary.LittleEndian.Uint64(b[16:]))}
	}
	return ws, nil
}
