package hfquant

// An independent generator of AWQ / GPTQ tensors, written from the published layouts (see the
// package comment) with its own arithmetic: nothing here calls Pack, Unpack's tables or
// Linear. Random codes, fp16 scales and zeros are packed by hand; Repack must give weights
// equal, bit for bit, to s·(q − z) computed here.

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// specCase is one generated linear: codes q[o][i], scales s[g][o] (fp16 bits), zeros z[g][o]
// and the group of each input column.
type specCase struct {
	out, in, bits int
	q             [][]int
	s             [][]uint16
	z             [][]int
	gidx          []int
}

func newSpecCase(r *rand.Rand, out, in, bits, group int, actOrder bool, symZero int) *specCase {
	ng := in / group
	c := &specCase{out: out, in: in, bits: bits, gidx: make([]int, in)}
	for i := range c.gidx {
		c.gidx[i] = i / group
	}
	if actOrder { // a random assignment with group columns each (what desc_act produces)
		r.Shuffle(in, func(a, b int) { c.gidx[a], c.gidx[b] = c.gidx[b], c.gidx[a] })
	}
	top := 1 << bits
	c.q = make([][]int, out)
	for o := range c.q {
		c.q[o] = make([]int, in)
		for i := range c.q[o] {
			c.q[o][i] = r.Intn(top)
		}
	}
	c.s, c.z = make([][]uint16, ng), make([][]int, ng)
	for g := 0; g < ng; g++ {
		c.s[g], c.z[g] = make([]uint16, out), make([]int, out)
		for o := 0; o < out; o++ {
			c.s[g][o] = tensor.F32ToF16(float32(r.Float64()*0.02 + 1e-4))
			c.z[g][o] = 1 + r.Intn(top-1) // 1..2^bits-1: storable by every format
			if symZero > 0 {
				c.z[g][o] = symZero
			}
		}
	}
	return c
}

func (c *specCase) want() []float32 {
	w := make([]float32, c.out*c.in)
	for o := 0; o < c.out; o++ {
		for i := 0; i < c.in; i++ {
			g := c.gidx[i]
			w[o*c.in+i] = tensor.F16ToF32(c.s[g][o]) * float32(c.q[o][i]-c.z[g][o])
		}
	}
	return w
}

func i32Tensor(name string, shape []int, words []uint32) *tensor.Tensor {
	b := make([]byte, 4*len(words))
	for i, v := range words {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return &tensor.Tensor{Name: name, Type: tensor.I32, Shape: shape, Data: b}
}

func (c *specCase) scalesTensor(name string) *tensor.Tensor {
	ng := len(c.s)
	b := make([]byte, 2*ng*c.out)
	for g := 0; g < ng; g++ {
		for o := 0; o < c.out; o++ {
			binary.LittleEndian.PutUint16(b[2*(g*c.out+o):], c.s[g][o])
		}
	}
	return &tensor.Tensor{Name: name, Type: tensor.F16, Shape: []int{ng, c.out}, Data: b}
}

// awqSlot is the nibble of its word that AWQ's GEMM packing gives out column o: the even
// columns of each 8 take nibbles 0..3, the odd ones 4..7.
func awqSlot(o int) int { return (o%8)/2 + 4*(o%2) }

// awqTensors packs c as AutoAWQ's WQLinear_GEMM stores it.
func (c *specCase) awqTensors(prefix string) map[string]*tensor.Tensor {
	ng := len(c.s)
	qw := make([]uint32, c.in*c.out/8)
	for i := 0; i < c.in; i++ {
		for o := 0; o < c.out; o++ {
			qw[i*(c.out/8)+o/8] |= uint32(c.q[o][i]) << (4 * awqSlot(o))
		}
	}
	qz := make([]uint32, ng*c.out/8)
	for g := 0; g < ng; g++ {
		for o := 0; o < c.out; o++ {
			qz[g*(c.out/8)+o/8] |= uint32(c.z[g][o]) << (4 * awqSlot(o))
		}
	}
	return map[string]*tensor.Tensor{
		prefix + ".qweight": i32Tensor(prefix+".qweight", []int{c.in, c.out / 8}, qw),
		prefix + ".qzeros":  i32Tensor(prefix+".qzeros", []int{ng, c.out / 8}, qz),
		prefix + ".scales":  c.scalesTensor(prefix + ".scales"),
	}
}

// gptqTensors packs c as AutoGPTQ (v1: stored zero = z−1) or GPTQModel v2 (stored z) does.
func (c *specCase) gptqTensors(prefix string, v1 bool) map[string]*tensor.Tensor {
	ng := len(c.s)
	per := 32 / c.bits
	mask := uint32(1)<<c.bits - 1
	qw := make([]uint32, c.in/per*c.out)
	for i := 0; i < c.in; i++ {
		for o := 0; o < c.out; o++ {
			qw[(i/per)*c.out+o] |= uint32(c.q[o][i]) << (c.bits * (i % per))
		}
	}
	qz := make([]uint32, ng*c.out/per)
	for g := 0; g < ng; g++ {
		for o := 0; o < c.out; o++ {
			z := uint32(c.z[g][o])
			if v1 {
				z = (z - 1) & mask
			}
			qz[g*(c.out/per)+o/per] |= z << (c.bits * (o % per))
		}
	}
	gi := make([]uint32, c.in)
	for i, g := range c.gidx {
		gi[i] = uint32(g)
	}
	return map[string]*tensor.Tensor{
		prefix + ".qweight": i32Tensor(prefix+".qweight", []int{c.in / per, c.out}, qw),
		prefix + ".qzeros":  i32Tensor(prefix+".qzeros", []int{ng, c.out / per}, qz),
		prefix + ".scales":  c.scalesTensor(prefix + ".scales"),
		prefix + ".g_idx":   i32Tensor(prefix+".g_idx", []int{c.in}, gi),
	}
}

func TestRepackMatchesSpec(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	type tc struct {
		name        string
		cfg         Config
		out, in     int
		group       int
		act         bool
		sym         int
		v1          bool
		wantType    tensor.DType
		wantPermute bool
	}
	cases := []tc{
		{"awq g128", Config{Method: "awq", Bits: 4, GroupSize: 128, ZeroPoint: true, Version: "gemm"}, 48, 256, 128, false, 0, false, tensor.Q4_0Z, false},
		{"awq g64", Config{Method: "awq", Bits: 4, GroupSize: 64, ZeroPoint: true, Version: "gemm"}, 16, 128, 64, false, 0, false, tensor.Q4_0Z, false},
		{"awq g32", Config{Method: "awq", Bits: 4, GroupSize: 32, ZeroPoint: true, Version: "gemm"}, 8, 64, 32, false, 0, false, tensor.Q4_0Z, false},
		{"awq g16 (float fallback)", Config{Method: "awq", Bits: 4, GroupSize: 16, ZeroPoint: true, Version: "gemm"}, 8, 64, 16, false, 0, false, tensor.F32, false},
		{"gptq4 v1 asym", Config{Method: "gptq", Bits: 4, GroupSize: 128, CheckpointFormat: "gptq"}, 24, 256, 128, false, 0, true, tensor.Q4_0Z, false},
		{"gptq4 v1 sym", Config{Method: "gptq", Bits: 4, GroupSize: 128, Sym: true, CheckpointFormat: "gptq"}, 24, 256, 128, false, 8, true, tensor.Q4_0Z, false},
		{"gptq4 v2", Config{Method: "gptq", Bits: 4, GroupSize: 64, CheckpointFormat: "gptq_v2"}, 16, 128, 64, false, 0, false, tensor.Q4_0Z, false},
		{"gptq4 desc_act", Config{Method: "gptq", Bits: 4, GroupSize: 64, DescAct: true, CheckpointFormat: "gptq"}, 16, 256, 64, true, 0, true, tensor.Q4_0Z, true},
		{"gptq4 per-channel", Config{Method: "gptq", Bits: 4, GroupSize: -1, CheckpointFormat: "gptq"}, 16, 96, 96, false, 0, true, tensor.Q4_0Z, false},
		{"gptq8 v1", Config{Method: "gptq", Bits: 8, GroupSize: 128, CheckpointFormat: "gptq"}, 12, 256, 128, false, 0, true, tensor.Q8_0Z, false},
		{"gptq8 desc_act v2", Config{Method: "gptq", Bits: 8, GroupSize: 32, DescAct: true, CheckpointFormat: "gptq_v2"}, 8, 128, 32, true, 0, false, tensor.Q8_0Z, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := newSpecCase(r, c.out, c.in, c.cfg.Bits, c.group, c.act, c.sym)
			var ts map[string]*tensor.Tensor
			if c.cfg.Method == "awq" {
				ts = sc.awqTensors("layer.q_proj")
			} else {
				ts = sc.gptqTensors("layer.q_proj", c.v1)
			}
			got, release, err := Repack(&c.cfg, ts, func(string) ([]int, bool) { return []int{c.out, c.in}, true })
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			if len(got) != 1 {
				t.Fatalf("%d tensors after repack, want 1", len(got))
			}
			w := got["layer.q_proj.weight"]
			if w == nil || w.Type != c.wantType {
				t.Fatalf("weight %v, want type %s", w, c.wantType)
			}
			if (w.Zero != nil && w.Zero.Perm != nil) != c.wantPermute {
				t.Fatalf("column permutation %v, want %v", w.Zero != nil && w.Zero.Perm != nil, c.wantPermute)
			}
			vals, err := w.Float32()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range sc.want() {
				if vals[i] != v {
					t.Fatalf("element [%d %d] = %g, want s*(q-z) = %g", i/c.in, i%c.in, vals[i], v)
				}
			}
		})
	}
}

// TestPackMatchesSpec checks the writer against the hand packing: RTN codes packed by Pack
// must be the words the generator makes from the same codes.
func TestPackMatchesSpec(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, c := range []Config{
		{Method: "awq", Bits: 4, GroupSize: 64, ZeroPoint: true, Version: "gemm"},
		{Method: "gptq", Bits: 4, GroupSize: 64, CheckpointFormat: "gptq"},
		{Method: "gptq", Bits: 8, GroupSize: 64, CheckpointFormat: "gptq"},
	} {
		out, in := 16, 128
		w := make([]float32, out*in)
		for i := range w {
			w[i] = float32(r.NormFloat64() * 0.05)
		}
		l, err := RTN(w, out, in, c.Bits, c.GroupSize, map[bool]int{true: 1, false: 0}[c.V1Zeros()])
		if err != nil {
			t.Fatal(err)
		}
		sc := &specCase{out: out, in: in, bits: c.Bits, gidx: make([]int, in), q: make([][]int, out)}
		for i := range sc.gidx {
			sc.gidx[i] = i / c.GroupSize
		}
		for o := range sc.q {
			sc.q[o] = make([]int, in)
			for i := range sc.q[o] {
				sc.q[o][i] = int(l.Codes[o*in+i])
			}
		}
		for g := 0; g < in/c.GroupSize; g++ {
			sc.s, sc.z = append(sc.s, make([]uint16, out)), append(sc.z, make([]int, out))
			for o := 0; o < out; o++ {
				sc.s[g][o], sc.z[g][o] = tensor.F32ToF16(l.Scales[g*out+o]), int(l.Zeros[g*out+o])
			}
		}
		var want map[string]*tensor.Tensor
		if c.Method == "awq" {
			want = sc.awqTensors("p")
		} else {
			want = sc.gptqTensors("p", true)
		}
		got, err := Pack(&c, "p", l)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d tensors, want %d", c.Method, len(got), len(want))
		}
		for _, g := range got {
			wt := want[g.Name]
			if wt == nil || string(g.Data) != string(wt.Data) || g.Type != wt.Type || len(g.Shape) != len(wt.Shape) {
				t.Fatalf("%s %d-bit: tensor %s differs from the hand-packed one", c.Method, c.Bits, g.Name)
			}
		}
		// RTN error: at most half a step per value.
		deq := l.Float32()
		for i := range w {
			s := l.Scales[(i%in)/c.GroupSize*out+i/in]
			if d := deq[i] - w[i]; d > s/2+1e-6 || d < -s/2-1e-6 {
				t.Fatalf("%s: RTN error %g above half the step %g", c.Method, d, s)
			}
		}
	}
}
