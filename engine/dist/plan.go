// This file is the wire form of one step: the batch rank 0's engine runs, which every other
// rank runs too (the same rows, positions and block tables, over its own KV heads).
package dist

import (
	"encoding/binary"
	"fmt"

	"github.com/llmcloud/llmcloud/model"
)

// Message kinds, the first word of every header.
const (
	msgStep  = 1 // a batch follows
	msgPing  = 2 // nothing follows: rank 0 is alive and idle
	msgStop  = 3 // rank 0 is shutting down: exit
	msgHello = 4 // the handshake follows (Setup)
)

// headerBytes is a header's size: kind, body bytes, step number (u32, u32, u64).
const headerBytes = 16

// encodePlan appends seqs to buf as little-endian u32s: the count, then per sequence the
// token count, start position, table length, flags (1: needs logits), logit rows, adapter,
// then its tokens and block table.
func encodePlan(buf []byte, seqs []model.BatchSeq) []byte {
	put := func(v int) { buf = binary.LittleEndian.AppendUint32(buf, uint32(int32(v))) }
	put(len(seqs))
	for _, s := range seqs {
		flags := 0
		if s.NeedsLogits {
			flags = 1
		}
		put(len(s.Tokens))
		put(s.StartPos)
		put(len(s.BlockTable))
		put(flags)
		put(s.NumLogits)
		put(int(s.Adapter))
		for _, t := range s.Tokens {
			put(t)
		}
		for _, b := range s.BlockTable {
			put(int(b))
		}
	}
	return buf
}

// decodePlan is encodePlan's inverse; seqs' slices are reused.
func decodePlan(b []byte, seqs []model.BatchSeq) ([]model.BatchSeq, error) {
	off := 0
	get := func() (int, error) {
		if off+4 > len(b) {
			return 0, fmt.Errorf("dist: step message of %d bytes is cut short", len(b))
		}
		v := int(int32(binary.LittleEndian.Uint32(b[off:])))
		off += 4
		return v, nil
	}
	n, err := get()
	if err != nil || n < 0 || n > len(b)/4 {
		return nil, fmt.Errorf("dist: step message: bad sequence count %d (%v)", n, err)
	}
	for len(seqs) < n {
		seqs = append(seqs, model.BatchSeq{})
	}
	seqs = seqs[:n]
	for i := range seqs {
		var h [6]int
		for j := range h {
			if h[j], err = get(); err != nil {
				return nil, err
			}
		}
		if h[0] < 0 || h[2] < 0 || (h[0]+h[2])*4 > len(b)-off {
			return nil, fmt.Errorf("dist: step message: sequence %d claims %d tokens and %d blocks", i, h[0], h[2])
		}
		s := &seqs[i]
		s.StartPos, s.NeedsLogits, s.NumLogits, s.Adapter = h[1], h[3]&1 != 0, h[4], uint32(h[5])
		s.Tokens, s.BlockTable = s.Tokens[:0], s.BlockTable[:0]
		for range h[0] {
			v, _ := get()
			s.Tokens = append(s.Tokens, v)
		}
		for range h[2] {
			v, _ := get()
			s.BlockTable = append(s.BlockTable, int32(v))
		}
	}
	if off != len(b) {
		return nil, fmt.Errorf("dist: step message: %d bytes left over", len(b)-off)
	}
	return seqs, nil
}
