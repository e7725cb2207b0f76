// This file runs the ops of tensor-parallel serving (graph.ShardTPServing): the all-reduces
// after the row-parallel matmuls and the vocab-parallel embedding, the embedding's block of
// vocabulary rows, and the all-gather of the vocab-parallel logits, over Options.TP.
package exec

import (
	"fmt"
	"unsafe"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// Collective is the tensor-parallel group a sharded graph's collectives run over (a
// *comm.Group). Every rank runs the same graph on the same rows, so the calls match.
type Collective interface {
	Rank() int
	Size() int
	AllReduceSum(x []float32) error
	AllGather(dst, src []byte) error
}

// TPError is a failed collective of the tensor-parallel group: what it reduced and why.
type TPError struct {
	What string // "attn_output", "ffn_down", "embedding", "logits"
	Err  error
}

func (e *TPError) Error() string { return fmt.Sprintf("tensor-parallel %s: %v", e.What, e.Err) }
func (e *TPError) Unwrap() error { return e.Err }

// compileTP compiles the tensor-parallel ops (ok false: n is not one of them).
func (p *Program) compileTP(n *graph.Node) (in instr, ok bool, err error) {
	switch n.Op {
	case "all_reduce_sum", "all_gather_last", "embedding_shard":
	default:
		return nil, false, nil
	}
	if n.Op != "embedding_shard" && p.tp == nil {
		return nil, true, fmt.Errorf("%s needs a tensor-parallel group (exec.Options.TP)", n.Op)
	}
	id := func(i int) int { return p.ids[n.Args[i]] }
	out := p.ids[n.Outs[0]]
	what := n.Attrs.Str("what", n.Op)
	switch n.Op {
	case "all_reduce_sum":
		return &allReduceOp{x: id(0), out: out, what: what}, true, nil
	case "all_gather_last":
		if s := int(n.Attrs.Int("size", 0)); s != p.tp.Size() {
			return nil, true, fmt.Errorf("gathers %d ranks, the group has %d", s, p.tp.Size())
		}
		return &allGatherOp{x: id(0), out: out, what: what}, true, nil
	}
	t := p.vals[id(0)].weight
	if t == nil || len(t.Shape) != 2 {
		return nil, true, fmt.Errorf("the table %s must be a matrix weight", n.Args[0])
	}
	return &embeddingShardOp{table: t, ids: id(1), out: out, lo: int(n.Attrs.Int("lo", 0))}, true, nil
}

type allReduceOp struct {
	x, out int
	what   string
}

func (o *allReduceOp) run(p *Program) error {
	x, y := p.f32(o.x), p.f32(o.out)
	if !aliased(x, y) {
		copy(y, x)
	}
	if err := p.tp.AllReduceSum(y); err != nil {
		return &TPError{What: o.what, Err: err}
	}
	return nil
}

// allGatherOp gathers every rank's [n, C] block into [n, size·C], rank r's block in columns
// [r·C, (r+1)·C) of every row.
type allGatherOp struct {
	x, out int
	what   string
	buf    []float32
}

func (o *allGatherOp) run(p *Program) error {
	x, y := p.f32(o.x), p.f32(o.out)
	size := p.tp.Size()
	if cap(o.buf) < size*len(x) {
		o.buf = make([]float32, size*len(x))
	}
	all := o.buf[:size*len(x)]
	if err := p.tp.AllGather(f32Bytes(all), f32Bytes(x)); err != nil {
		return &TPError{What: o.what, Err: err}
	}
	C := p.vals[o.x].last
	rows := len(x) / max(C, 1)
	for r := range size {
		blk := all[r*len(x) : (r+1)*len(x)]
		for i := range rows {
			copy(y[i*size*C+r*C:i*size*C+(r+1)*C], blk[i*C:(i+1)*C])
		}
	}
	return nil
}

// embeddingShardOp is embedding_shard: ids in this rank's rows [lo, lo+V) of the table are
// looked up, the others give zero rows (the all_reduce_sum after it adds the owner's row).
type embeddingShardOp struct {
	table        *tensor.Tensor
	ids, out, lo int
}

func (o *embeddingShardOp) run(p *Program) error {
	ids, out := p.vals[o.ids].ints, p.f32(o.out)
	rows, d := o.table.Shape[0], o.table.Shape[1]
	for i, t := range ids {
		row := out[i*d : (i+1)*d]
		if t < 0 {
			return fmt.Errorf("row %d: id %d out of range", i, t)
		}
		if t -= o.lo; t < 0 || t >= rows {
			clear(row)
			continue
		}
		if err := tensor.DequantizeRow(o.table.Type, o.table.RowData(t), row); err != nil {
			return fmt.Errorf("%s row %d: %w", o.table.Name, t, err)
		}
	}
	return nil
}

// f32Bytes views x as bytes (the collectives move bytes).
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}
