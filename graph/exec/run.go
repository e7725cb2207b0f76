// This file is Program.Run: one step of a ragged batch (rows of many sequences, prefill chunks
// and decode tokens mixed) through the compiled graph, with buffers grown only when a batch is
// larger than any before (so decode steps after warm-up allocate nothing here).
package exec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// Step is one batch.
type Step struct {
	Tokens []int // the rows' token ids (input "tokens")
	// Rows are each row's position (input "pos") and its sequence's block table (rows of one
	// sequence share one table slice, which must cover the row's position).
	Rows []kernels.PagedRow
	// GroupRows, when KV.Group puts layers in KV groups other than 0 (layers attending under
	// another window, with block tables of their own), holds group g's rows in GroupRows[g-1]:
	// the same positions as Rows, each with its sequence's table of that group.
	GroupRows [][]kernels.PagedRow
	LogitRows []int // the rows whose output is wanted (input "logit_rows"), in output order
	KV        KV
	// LoRA, with LoRASegs, adds run-time adapters' updates after each matmul (lora.go); nil
	// or no segments: the base model alone.
	LoRA     Adapters
	LoRASegs []LoRASeg
	// Hidden is the input Options.Hidden names: [rows, width] (a later pipeline stage's).
	Hidden []float32
	// Out, when it has the capacity, receives the output (otherwise a buffer of the Program's,
	// valid until its next Run).
	Out []float32
}

// KV is the paged KV pool: per layer K and V rows [numBlocks*BlockSize, kvDim].
type KV struct {
	K, V [][]float32
	// KQ, VQ hold the layers' rows instead when the cache is not f32: byte rows in KFmt and
	// VFmt (kernels/kvcache.go; K and V's layers are then nil).
	KQ, VQ     [][]byte
	KFmt, VFmt kernels.KVFormat
	BlockSize  int
	// Group, when set, is each layer's KV group: layer l's slots are found through the block
	// tables of group Group[l] (Step.Rows for group 0, Step.GroupRows otherwise). Nil: every
	// layer uses Step.Rows.
	Group []int
}

// layerRows returns the rows whose block tables address layer's KV slots.
func (st *Step) layerRows(layer int) ([]kernels.PagedRow, error) {
	if st.KV.Group == nil || layer >= len(st.KV.Group) || st.KV.Group[layer] == 0 {
		return st.Rows, nil
	}
	g := st.KV.Group[layer]
	if g < 0 || g > len(st.GroupRows) || len(st.GroupRows[g-1]) != len(st.Rows) {
		return nil, fmt.Errorf("layer %d in KV group %d: the step has rows for %d groups", layer, g, len(st.GroupRows)+1)
	}
	return st.GroupRows[g-1], nil
}

// Run executes the graph over st and returns its output ([len(LogitRows), vocab] for a model).
func (p *Program) Run(st *Step) ([]float32, error) {
	n := len(st.Tokens)
	if len(st.Rows) != n {
		return nil, fmt.Errorf("exec: %d tokens but %d rows", n, len(st.Rows))
	}
	if n == 0 {
		return nil, fmt.Errorf("exec: no tokens")
	}
	if st.KV.BlockSize <= 0 || len(st.KV.K) != len(st.KV.V) {
		return nil, fmt.Errorf("exec: paged KV of block size %d with %d K and %d V layers", st.KV.BlockSize, len(st.KV.K), len(st.KV.V))
	}
	for _, r := range st.LogitRows {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("exec: logit row %d outside the batch of %d", r, n)
		}
	}
	if cap(p.posBuf) < n {
		p.posBuf = make([]int, n)
	}
	pos := p.posBuf[:n]
	for i, r := range st.Rows {
		if r.Pos < 0 {
			return nil, fmt.Errorf("exec: row %d at position %d", i, r.Pos)
		}
		pos[i] = r.Pos
	}
	changed := false
	for i, id := range p.inputOrder {
		x := p.vals[id]
		switch x.v.Name {
		case InputTokens:
			x.ints = st.Tokens
		case InputPositions:
			x.ints = pos
		case InputLogitRows:
			x.ints = st.LogitRows
		}
		changed = changed || p.lastRows[i] != len(x.ints)
		p.lastRows[i] = len(x.ints)
	}
	if changed || !p.viewsOK {
		p.viewsOK = false
		if err := p.views(); err != nil {
			return nil, err
		}
		p.viewsOK = true
	}
	if p.hidden >= 0 {
		h := p.vals[p.hidden]
		if len(st.Hidden) != n*h.inner {
			return nil, fmt.Errorf("exec: hidden input of %d values for %d rows of %d", len(st.Hidden), n, h.inner)
		}
		h.data = st.Hidden
	}
	out := p.vals[p.out]
	out.data = p.outBuf
	if need := len(out.data); cap(st.Out) >= need {
		out.data = st.Out[:need]
	}
	p.step = st
	p.runs++
	defer func() {
		p.step = nil
		if p.hidden >= 0 {
			p.vals[p.hidden].data = nil
		}
		for _, id := range p.inputOrder {
			p.vals[id].ints = nil
		}
	}()
	if p.prof != nil {
		if err := p.runProfiled(st); err != nil {
			return nil, err
		}
		return out.data, nil
	}
	for i, in := range p.code {
		if err := in.run(p); err != nil {
			n := p.nodes[i]
			return nil, fmt.Errorf("exec: node %s (%s): %w", n.Name(), n.Op, err)
		}
	}
	return out.data, nil
}

// views binds the symbols from the inputs' lengths, grows the slots to fit and points every
// value at its slot (only when the batch's shape differs from the previous run's).
func (p *Program) views() error {
	clear(p.env)
	for _, id := range p.inputOrder {
		x := p.vals[id]
		if old, ok := p.env[x.sym]; ok && old != len(x.ints) {
			return fmt.Errorf("exec: input %s has %d rows, %s = %d", x.v, len(x.ints), x.sym, old)
		}
		p.env[x.sym] = len(x.ints)
	}
	for i := range p.slots {
		s := &p.slots[i]
		need, err := p.rowsOf(s.sym, 1)
		if err != nil {
			return err
		}
		if need *= s.inner; cap(s.buf) < need {
			s.buf = make([]float32, need)
		}
	}
	for _, x := range p.vals {
		if x.slot < 0 {
			continue
		}
		rows, err := p.rowsOf(x.sym, x.rows)
		if err != nil {
			return err
		}
		x.data = p.slots[x.slot].buf[:rows*x.inner]
	}
	p.outBuf = p.vals[p.out].data
	return nil
}

// rowsOf is the number of rows of a value whose first dimension is sym (fixed when sym is "").
func (p *Program) rowsOf(sym string, fixed int) (int, error) {
	if sym == "" {
		return max(fixed, 1), nil
	}
	r, ok := p.env[sym]
	if !ok {
		return 0, fmt.Errorf("exec: symbol %s is not bound by any input", sym)
	}
	return r, nil
}

// f32 is the data of value id (a weight's decoded values).
func (p *Program) f32(id int) []float32 {
	x := p.vals[id]
	if x.data == nil {
		return x.vec
	}
	return x.data
}
