// This file turns unpacked linears into llmcloud weights at load: the zero-corrected
// Q4_0Z / Q8_0Z types (exact: Q4_0/Q8_0 rows with d = the fp16 scale, plus a float32
// correction per row and group; see tensor/groupzero.go), or, where that cannot hold the
// checkpoint exactly (scales that are not fp16 values, groups that are not whole blocks of
// 32 columns), F32 dequantized weights.
package hfquant

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unsafe"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

// partSuffixes are the tensor name endings of a quantized linear.
var partSuffixes = []string{".qweight", ".qzeros", ".scales", ".g_idx"}

// Collect groups the quantized linears' tensors of ts (Hugging Face names) by linear, sorted
// by prefix. A .qzeros, .scales or .g_idx without its .qweight is an error.
func Collect(c *Config, ts map[string]*tensor.Tensor) ([]*Parts, error) {
	byPrefix := map[string]*Parts{}
	for name, t := range ts {
		for _, s := range partSuffixes {
			prefix, ok := strings.CutSuffix(name, s)
			if !ok {
				continue
			}
			p := byPrefix[prefix]
			if p == nil {
				p = &Parts{Prefix: prefix}
				byPrefix[prefix] = p
			}
			switch s {
			case ".qweight":
				p.QWeight = t
			case ".qzeros":
				p.QZeros = t
			case ".scales":
				p.Scales = t
			case ".g_idx":
				p.GIdx = t
			}
		}
	}
	out := make([]*Parts, 0, len(byPrefix))
	for _, p := range byPrefix {
		if p.QWeight == nil {
			return nil, fmt.Errorf("quantized linear %s has no %s.qweight (quantization_config.quant_method %s)", p.Prefix, p.Prefix, c.Method)
		}
		if _, dup := ts[p.Prefix+".weight"]; dup {
			return nil, fmt.Errorf("linear %s has both %s.weight and %s.qweight", p.Prefix, p.Prefix, p.Prefix)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out, nil
}

// Repack returns ts with each quantized linear's tensors replaced by its weight
// (prefix.weight, [out, in]). want, if not nil, gives the [out, in] that config.json implies
// for a weight name (ok false: unknown), checked before any unpacking. The repacked weights
// live in one region of huge-page-backed memory (decode streams them: 2 MiB pages spare the
// TLB); release unmaps it, once nothing uses the weights.
func Repack(c *Config, ts map[string]*tensor.Tensor, want func(name string) ([]int, bool)) (out map[string]*tensor.Tensor, release func() error, err error) {
	parts, err := Collect(c, ts)
	if err != nil {
		return nil, nil, err
	}
	out = make(map[string]*tensor.Tensor, len(ts))
	for name, t := range ts {
		out[name] = t
	}
	total := 0
	for _, p := range parts {
		o, i, err := Shape(c, p)
		if err != nil {
			return nil, nil, err
		}
		name := p.Prefix + ".weight"
		if want != nil {
			if w, ok := want(name); ok && (len(w) != 2 || w[0] != o || w[1] != i) {
				return nil, nil, fmt.Errorf("tensor %s has shape %v, so with quantization_config.bits = %d and group_size = %d the weight %s is [%d %d], but config.json implies %v",
					p.QWeight.Name, p.QWeight.Shape, c.Bits, c.GroupSize, name, o, i, w)
			}
		}
		total += arenaBytes(o*i/32*34) + arenaBytes(4*o*i/32) // at most: Q8_0 blocks, groups of 32
	}
	var arena []byte
	release = func() error { return nil }
	if total > 0 {
		if arena, release, err = mmap.AnonHuge(total); err != nil {
			arena, release = make([]byte, total), func() error { return nil }
		}
	}
	alloc := func(n int) []byte {
		if len(arena) < arenaBytes(n) {
			return make([]byte, n)
		}
		b := arena[:n:n]
		arena = arena[arenaBytes(n):]
		return b
	}
	for _, p := range parts {
		l, err := Unpack(c, p)
		if err != nil {
			release()
			return nil, nil, err
		}
		w, err := l.weight(p.Prefix+".weight", alloc)
		if err != nil {
			release()
			return nil, nil, err
		}
		for _, s := range partSuffixes {
			delete(out, p.Prefix+s)
		}
		out[w.Name] = w
	}
	return out, release, nil
}

// arenaBytes rounds n up to a multiple of 64 (each allocation starts on a cache line).
func arenaBytes(n int) int { return (n + 63) &^ 63 }

// Weight is l as an llmcloud weight [Out, In]: Q4_0Z (4 bits) or Q8_0Z (8 bits) when exact,
// else F32.
func (l *Linear) Weight(name string) (*tensor.Tensor, error) {
	return l.weight(name, func(n int) []byte { return make([]byte, n) })
}

func (l *Linear) weight(name string, alloc func(int) []byte) (*tensor.Tensor, error) {
	perm, group, ok := l.blockOrder()
	for _, s := range l.Scales {
		if tensor.F16ToF32(tensor.F32ToF16(s)) != s {
			ok = false
			break
		}
	}
	if !ok {
		return floatWeight(name, l), nil
	}
	dt, bb, mid := tensor.Q4_0Z, 18, int32(8)
	if l.Bits == 8 {
		dt, bb, mid = tensor.Q8_0Z, 34, 128
	}
	nb, ng := l.In/32, l.In/group
	cb := alloc(4 * l.Out * ng)
	corr := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(cb))), l.Out*ng)
	t := &tensor.Tensor{Name: name, Type: dt, Shape: []int{l.Out, l.In}, Data: alloc(l.Out * nb * bb),
		Zero: &tensor.GroupZero{Group: group, Corr: corr, Perm: perm}}
	clear(t.Data)
	col := func(j int) int { return j }
	if perm != nil {
		col = func(j int) int { return int(perm[j]) }
	}
	for o := 0; o < l.Out; o++ {
		codes := l.Codes[o*l.In : (o+1)*l.In]
		for g := 0; g < ng; g++ {
			gid := l.GroupOf(col(g * group))
			s, z := l.Scales[gid*l.Out+o], l.Zeros[gid*l.Out+o]
			t.Zero.Corr[g*l.Out+o] = s * float32(mid-z)
			d := tensor.F32ToF16(s)
			for b := g * group / 32; b < (g+1)*group/32; b++ {
				blk := t.Data[(o*nb+b)*bb : (o*nb+b+1)*bb]
				blk[0], blk[1] = byte(d), byte(d>>8)
				for j := 0; j < 32; j++ {
					q := codes[col(b*32+j)]
					if l.Bits == 8 {
						blk[2+j] = byte(int8(int32(q) - 128))
					} else if j < 16 {
						blk[2+j] = q
					} else {
						blk[2+j-16] |= q << 4
					}
				}
			}
		}
	}
	// 4-bit with groups of 128k columns: the zero points as the VNNI decode kernel folds them
	// into its integer dot product (nil otherwise; the corrections above serve every path).
	t.Zero.Codes = t.ZeroCodes()
	return t, nil
}

// blockOrder returns the stored column order (nil: as is) and the stored group size for a
// zero-corrected weight; ok is false when the groups cannot be laid out as equal runs of
// whole 32-column blocks.
func (l *Linear) blockOrder() (perm []int32, group int, ok bool) {
	if l.In%32 != 0 {
		return nil, 0, false
	}
	if l.GIdx == nil {
		return nil, l.Group, l.Group%32 == 0 && l.In%l.Group == 0
	}
	ng := l.Groups()
	count := make([]int, ng)
	for _, g := range l.GIdx {
		count[g]++
	}
	size := count[0]
	for _, c := range count {
		if c != size {
			return nil, 0, false
		}
	}
	if size%32 != 0 || size*ng != l.In {
		return nil, 0, false
	}
	perm = make([]int32, l.In)
	for i := range perm {
		perm[i] = int32(i)
	}
	sort.SliceStable(perm, func(a, b int) bool { return l.GIdx[perm[a]] < l.GIdx[perm[b]] })
	return perm, size, true
}

func floatWeight(name string, l *Linear) *tensor.Tensor {
	w := l.Float32()
	t := &tensor.Tensor{Name: name, Type: tensor.F32, Shape: []int{l.Out, l.In}, Data: make([]byte, 4*len(w))}
	for i, v := range w {
		b := t.Data[4*i:]
		u := math.Float32bits(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return t
}
