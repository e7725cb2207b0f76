package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var kvTypes = []KVDType{KVF16, KVBF16, KVQ8, KVFP8}

// kvPaths runs f on every CPU path of the KV loaders and attention kernels this machine has:
// the plain-Go reference, the fast kernels with Go loaders, AVX2 only, and everything.
func kvPaths(t *testing.T, f func(t *testing.T)) {
	defer func(r, k, z bool) { Reference, kvAsm, useAVX512 = r, k, z }(Reference, kvAsm, useAVX512)
	asm, z := kvAsm, useAVX512
	paths := []struct {
		name    string
		ref, kv bool
		z       bool
	}{{"reference", true, false, false}, {"go-loaders", false, false, z}, {"avx2", false, asm, false}, {"avx512", false, asm, z}}
	for _, p := range paths {
		if p.name == "avx512" && !z || p.name == "avx2" && !asm {
			continue
		}
		Reference, kvAsm, useAVX512 = p.ref, p.kv, p.z
		t.Run(p.name, f)
	}
}

func TestParseKVDType(t *testing.T) {
	for s, want := range map[string]KVDType{"auto": KVF32, "fp32": KVF32, "fp16": KVF16, "bf16": KVBF16, "q8_0": KVQ8, "fp8": KVFP8, "fp8_e4m3": KVFP8} {
		if got, err := ParseKVDType(s); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	if _, err := ParseKVDType("q4_0"); err == nil {
		t.Error("q4_0 parsed")
	}
}

func TestKVFormatBytes(t *testing.T) {
	for _, c := range []struct {
		t        KVDType
		w, hd    int
		row, grp int
	}{{KVF16, 256, 64, 512, 0}, {KVQ8, 256, 64, 256 + 16, 32}, {KVQ8, 32, 8, 34, 32}, {KVFP8, 80, 80, 82, 80}, {KVQ8, 576, 576, 576 + 36, 32}} {
		f, err := NewKVFormat(c.t, c.w, c.hd)
		if err != nil || f.RowBytes != c.row || f.Group != c.grp {
			t.Errorf("%v %d/%d: %+v %v, want %d bytes, groups of %d", c.t, c.w, c.hd, f, err, c.row, c.grp)
		}
	}
}

func TestFP8Encode(t *testing.T) {
	for c := 0; c < 256; c++ {
		v := fp8Table[c]
		if v != v {
			continue
		}
		if got := fp8Encode(v); fp8Table[got] != v {
			t.Fatalf("code %#x (%g) encodes to %#x (%g)", c, v, got, fp8Table[got])
		}
	}
	if fp8Encode(1e6) != 0x7e || fp8Encode(-1e6) != 0xfe {
		t.Error("no saturation at 448")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		x := float32(r.NormFloat64() * 50)
		got := fp8Table[fp8Encode(x)]
		if d := math.Abs(float64(got - x)); d > math.Abs(float64(x))/16+1.0/1024 {
			t.Fatalf("%g rounds to %g", x, got)
		}
	}
}

// TestKVStoreLoad checks each format's round trip error and that every loader path gives the
// reference's values bit for bit.
func TestKVStoreLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	kvPaths(t, func(t *testing.T) {
		for _, typ := range kvTypes {
			for _, sh := range [][2]int{{256, 64}, {64, 8}, {128, 128}, {96, 32}, {48, 24}, {80, 80}} {
				w, hd := sh[0], sh[1]
				f, err := NewKVFormat(typ, w, hd)
				if err != nil {
					t.Fatal(err)
				}
				const rows = 7
				src := make([]float32, rows*w)
				for i := range src {
					src[i] = float32(r.NormFloat64()) * 3
				}
				pool := make([]byte, rows*f.RowBytes)
				for i := range rows {
					f.StoreRow(pool, i, src[i*w:(i+1)*w])
				}
				for off := 0; off < w; off += hd {
					got, want := make([]float32, 5*hd), make([]float32, 5*hd)
					f.LoadRows(got, pool, 1, 5, off, hd)
					f.loadRowsRef(want, pool, 1, 5, off, hd)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %d/%d off %d: value %d: %g, reference %g", typ, w, hd, off, i, got[i], want[i])
						}
						x := src[(1+i/hd)*w+off+i%hd]
						tol := map[KVDType]float64{KVF16: 1e-3, KVBF16: 1e-2, KVQ8: 0.02, KVFP8: 0.07}[typ] * 12
						if d := math.Abs(float64(got[i] - x)); d > tol*math.Max(1, math.Abs(float64(x))/3) {
							t.Fatalf("%v: %g stored as %g", typ, x, got[i])
						}
					}
				}
			}
		}
	})
}

// quantFixture stores f's pools in typ, and returns them with the f32 pools of their
// dequantized values.
func quantFixture(t *testing.T, f *pagedFixture, typ KVDType) (KVLayer, KVLayer) {
	fm, err := NewKVFormat(typ, f.kvd, f.hd)
	if err != nil {
		t.Fatal(err)
	}
	rows := len(f.kc) / f.kvd
	q := KVLayer{KQ: make([]byte, rows*fm.RowBytes), VQ: make([]byte, rows*fm.RowBytes), Fmt: fm}
	d := KVLayer{K: make([]float32, len(f.kc)), V: make([]float32, len(f.vc))}
	for i := range rows {
		fm.StoreRow(q.KQ, i, f.kc[i*f.kvd:])
		fm.StoreRow(q.VQ, i, f.vc[i*f.kvd:])
	}
	fm.loadRowsRef(d.K, q.KQ, 0, rows, 0, f.kvd)
	fm.loadRowsRef(d.V, q.VQ, 0, rows, 0, f.kvd)
	return q, d
}

// TestPagedAttentionKV checks attention over a quantized pool against the f32 kernels on the
// dequantized pool (bit for bit: same kernels, same order) and against the f32 pool (within
// the format's error), for prefill tiles and decode rows, plain and with options.
func TestPagedAttentionKV(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pool := NewPool(2)
	kvPaths(t, func(t *testing.T) {
		for _, typ := range kvTypes {
			// {6, 6, 64} and {4, 2, 128}: one and two heads per KV head, whose decode rows run
			// the position-major kernels on f16 and bf16 pools directly (paged_rowmajor.go).
			for _, sh := range [][3]int{{8, 2, 64}, {8, 4, 8}, {4, 4, 32}, {6, 2, 128}, {6, 6, 64}, {4, 2, 128}} {
				heads, kvh, hd := sh[0], sh[1], sh[2]
				for _, bs := range []int{16, 7} {
					const nPos = 150
					f := newPagedFixture(r, nPos, bs, heads, kvh, hd)
					q, d := quantFixture(t, f, typ)
					var rows []PagedRow
					for p := 0; p < nPos; p += 1 + p%5 { // a few prefill runs and lone rows
						rows = append(rows, PagedRow{Pos: p, Table: f.table})
					}
					qd := heads * hd
					x := make([]float32, len(rows)*qd)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					for _, o := range []AttnOpts{{}, {Window: 20, Softcap: 30}} {
						name := fmt.Sprintf("%v h%d/%d hd%d bs%d %+v", typ, heads, kvh, hd, bs, o)
						got, want, exact := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
						var a PagedAttention
						if err := a.RunLayer(pool, got, x, q, rows, heads, kvh, hd, bs, o); err != nil {
							t.Fatal(name, err)
						}
						if err := a.RunLayer(pool, want, x, d, rows, heads, kvh, hd, bs, o); err != nil {
							t.Fatal(name, err)
						}
						if err := a.RunOpts(pool, exact, x, f.kc, f.vc, rows, heads, kvh, hd, bs, o); err != nil {
							t.Fatal(name, err)
						}
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s: output %d: %g, f32 kernels on the dequantized pool %g", name, i, got[i], want[i])
							}
						}
						tol := map[KVDType]float64{KVF16: 2e-3, KVBF16: 2e-2, KVQ8: 3e-2, KVFP8: 0.15}[typ] // one value is read alone at position 0
						if e := maxAbsDiff(got, exact); e > tol {
							t.Errorf("%s: max |quantized - f32| = %g > %g", name, e, tol)
						}
					}
					// A lone decode row (a decode step of one sequence): each worker runs several
					// KV heads of it interleaved (paged_interleave.go), which the batch above,
					// handed out an item at a time, does not.
					last := []PagedRow{{Pos: nPos - 1, Table: f.table}}
					got, want := make([]float32, qd), make([]float32, qd)
					var a PagedAttention
					if err := a.RunLayer(pool, got, x[:qd], q, last, heads, kvh, hd, bs, AttnOpts{}); err != nil {
						t.Fatal(err)
					}
					if err := a.RunLayer(pool, want, x[:qd], d, last, heads, kvh, hd, bs, AttnOpts{}); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v h%d/%d hd%d bs%d, a lone decode row: output %d: %g, f32 kernels on the dequantized pool %g", typ, heads, kvh, hd, bs, i, got[i], want[i])
						}
					}
				}
			}
		}
	})
}

func BenchmarkKVLoad(b *testing.B) {
	for _, typ := range []KVDType{KVF16, KVQ8, KVFP8} {
		f, _ := NewKVFormat(typ, 256, 64)
		pool := make([]byte, 64*f.RowBytes)
		src := make([]float32, 256)
		for i := range src {
			src[i] = float32(i%17) - 8
		}
		for i := range 64 {
			f.StoreRow(pool, i, src)
		}
		dst := make([]float32, 64*64)
		for _, asm := range []bool{false, true} {
			b.Run(fmt.Sprintf("%v/asm=%v", typ, asm), func(b *testing.B) {
				defer func(k bool) { kvAsm = k }(kvAsm)
				kvAsm = kvAsm && asm
				b.SetBytes(64 * 64 * 4)
				for b.Loop() {
					f.LoadRows(dst, pool, 0, 64, 64, 64)
				}
			})
		}
	}
}

// BenchmarkPagedAttentionKV times attention over 1024 cached positions in blocks of 16 for
// each cache type, on TinyLlama's heads (32 over 4 KV heads of 64) and the default model's (8
// over 4 of 32): one decode row, and a prefill chunk of 128 rows.
func BenchmarkPagedAttentionKV(b *testing.B) {
	for _, sh := range []struct {
		name           string
		heads, kvh, hd int
	}{{"tinyllama", 32, 4, 64}, {"default", 8, 4, 32}} {
		const bs, ctx = 16, 1024 + 128
		heads, kvh, hd := sh.heads, sh.kvh, sh.hd
		r := rand.New(rand.NewPCG(1, 1))
		f := newPagedFixture(r, ctx, bs, heads, kvh, hd)
		pool := NewPool(1)
		for _, n := range []int{1, 128} {
			var rows []PagedRow
			for i := range n {
				rows = append(rows, PagedRow{Pos: 1024 + i, Table: f.table})
			}
			q := make([]float32, n*heads*hd)
			out := make([]float32, len(q))
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			for _, typ := range []KVDType{KVF32, KVF16, KVBF16, KVQ8, KVFP8} {
				kv := KVLayer{K: f.kc, V: f.vc}
				if typ != KVF32 {
					var t testing.T
					kv, _ = quantFixture(&t, f, typ)
				}
				b.Run(fmt.Sprintf("%s/rows=%d/%v", sh.name, n, typ), func(b *testing.B) {
					var a PagedAttention
					for b.Loop() {
						if err := a.RunLayer(pool, out, q, kv, rows, heads, kvh, hd, bs, AttnOpts{}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
