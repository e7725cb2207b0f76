package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// windowRef is the float64 reference of windowed, soft-capped, scaled attention of one row at
// position pos over the gathered keys and values ([nPos, kvd]).
func windowRef(q []float32, kg, vg []float32, pos, heads, kvh, hd int, o AttnOpts) []float32 {
	out := make([]float32, heads*hd)
	kvd, grp := kvh*hd, heads/kvh
	scale := 1 / math.Sqrt(float64(hd))
	if o.Scale > 0 {
		scale = float64(o.Scale)
	}
	lo := 0
	if o.Window > 0 {
		lo = max(0, pos-o.Window+1)
	}
	for h := 0; h < heads; h++ {
		ko := (h / grp) * hd
		s := make([]float64, pos-lo+1)
		mx := math.Inf(-1)
		for j := range s {
			var d float64
			for i := 0; i < hd; i++ {
				d += float64(q[h*hd+i]) * float64(kg[(lo+j)*kvd+ko+i])
			}
			d *= scale
			if o.Softcap > 0 {
				c := float64(o.Softcap)
				d = c * math.Tanh(d/c)
			}
			s[j] = d
			mx = max(mx, d)
		}
		var sum float64
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		for i := 0; i < hd; i++ {
			var y float64
			for j := range s {
				y += s[j] * float64(vg[(lo+j)*kvd+ko+i])
			}
			out[h*hd+i] = float32(y / sum)
		}
	}
	return out
}

// TestPagedAttentionOptsMatchesReference runs a batch of rows of one sequence (a prefill
// chunk and its last position) with every combination of window, soft-cap and scale, the
// blocks before the first row's window freed (-1) in its table.
func TestPagedAttentionOptsMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const nPos, bs, heads, kvh, hd = 70, 8, 4, 2, 16
	f := newPagedFixture(r, nPos, bs, heads, kvh, hd)
	pool := NewPool(2)
	for _, o := range []AttnOpts{{Window: 5}, {Window: 17, Softcap: 1.5}, {Softcap: 2}, {Scale: 0.1}, {Window: 1, Scale: 0.3, Softcap: 3}, {Window: 100, Softcap: 50}} {
		first := 40
		table := append([]int32(nil), f.table...)
		for b := 0; b < o.First(first)/bs; b++ {
			table[b] = -1 // outside every row's window: never read
		}
		var rows []PagedRow
		for p := first; p < nPos; p++ {
			rows = append(rows, PagedRow{Pos: p, Table: table})
		}
		q := make([]float32, len(rows)*heads*hd)
		for i := range q {
			q[i] = r.Float32()*4 - 2
		}
		out := make([]float32, len(q))
		var pa PagedAttention
		if err := pa.RunOpts(pool, out, q, f.kc, f.vc, rows, heads, kvh, hd, bs, o); err != nil {
			t.Fatal(err)
		}
		qd := heads * hd
		for i, row := range rows {
			want := windowRef(q[i*qd:(i+1)*qd], f.kg, f.vg, row.Pos, heads, kvh, hd, o)
			if d := maxAbsDiff(out[i*qd:(i+1)*qd], want); d > 2e-6 {
				t.Errorf("%+v: row at %d: max diff %g", o, row.Pos, d)
			}
		}
	}
}

// TestPagedAttentionOptsZeroIsRun: no options is the flash kernel itself, bit for bit.
func TestPagedAttentionOptsZeroIsRun(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const nPos, bs, heads, kvh, hd = 33, 16, 4, 1, 32
	f := newPagedFixture(r, nPos, bs, heads, kvh, hd)
	pool := NewPool(2)
	rows := []PagedRow{{Pos: 30, Table: f.table}, {Pos: 31, Table: f.table}, {Pos: 32, Table: f.table}}
	q := make([]float32, len(rows)*heads*hd)
	for i := range q {
		q[i] = r.Float32()*4 - 2
	}
	a, b := make([]float32, len(q)), make([]float32, len(q))
	var p1, p2 PagedAttention
	if err := p1.Run(pool, a, q, f.kc, f.vc, rows, heads, kvh, hd, bs); err != nil {
		t.Fatal(err)
	}
	if err := p2.RunOpts(pool, b, q, f.kc, f.vc, rows, heads, kvh, hd, bs, AttnOpts{}); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("element %d: %v vs %v", i, a[i], b[i])
		}
	}
	// A freed block inside a row's window is an error, not a read.
	bad := append([]int32(nil), f.table...)
	bad[1] = -1
	err := p2.RunOpts(pool, b, q, f.kc, f.vc, []PagedRow{{Pos: 32, Table: bad}}, heads, kvh, hd, bs, AttnOpts{Window: 20})
	if err == nil {
		t.Fatal("a freed block inside the window was accepted")
	}
}
