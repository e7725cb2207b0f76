// This file implements Parse: decoding a GGUF v2/v3 image held in memory. Every count and
// length is checked against the bytes that remain before anything is allocated, and every
// error names the file and what is wrong. Tensor Data slices alias the input.
package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/llmcloud/llmcloud/tensor"
)

const (
	magic            = 0x46554747 // "GGUF" little-endian
	defaultAlignment = 32
	maxDims          = 4
	maxNesting       = 32
	// KeyAlignment is the metadata key that sets the data alignment.
	KeyAlignment = "general.alignment"
)

// File is a parsed GGUF file.
type File struct {
	Path       string
	Version    uint32
	Alignment  int
	KVs        []KV            // file order
	Tensors    []tensor.Tensor // Shape row-major (outermost first); Data aliases the file image
	DataOffset int64           // start of the tensor data section

	kvIndex map[string]int
	tIndex  map[string]int
	closer  func() error
	image   []byte // what Parse parsed (Open: the mapping)
}

// Image is the whole file as parsed, the bytes tensor Data alias (from Open: the mapping).
func (f *File) Image() []byte { return f.image }

// decoder reads little-endian fields from buf, remembering the first error.
type decoder struct {
	buf  []byte
	off  int
	name string
}

func (d *decoder) errf(format string, a ...any) error {
	return fmt.Errorf("%s: %s", d.name, fmt.Sprintf(format, a...))
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

func (d *decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, d.errf("truncated file: %s needs %d bytes at offset %d, file size %d", what, n, d.off, len(d.buf))
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 element count and rejects it unless count*minSize bytes remain.
func (d *decoder) count(what string, minSize int) (int, error) {
	at := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, d.errf("%s %d at offset %d is impossible: only %d bytes remain", what, n, at, d.remaining())
	}
	return int(n), nil
}

func (d *decoder) str(what string) (string, error) {
	at := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", d.errf("%s at offset %d: string length %d is larger than the %d bytes left in the file", what, at, n, d.remaining())
	}
	b, _ := d.take(int(n), what)
	return string(b), nil
}

// Parse decodes a GGUF image. name is used in error messages (usually the path).
func Parse(data []byte, name string) (*File, error) {
	d := &decoder{buf: data, name: name}
	m, err := d.u32("magic")
	if err != nil {
		return nil, err
	}
	if m != magic {
		return nil, d.errf("bad magic %q (want \"GGUF\"): not a GGUF file", data[:4])
	}
	f := &File{Path: name, Alignment: defaultAlignment, image: data}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, d.errf("unsupported GGUF version %d (want 2 or 3)", f.Version)
	}
	nTensors, err := d.count("tensor count", 24)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("metadata count", 13)
	if err != nil {
		return nil, err
	}
	if err := f.readKVs(d, nKV); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(d, nTensors); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) readKVs(d *decoder, n int) error {
	f.KVs = make([]KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := 0; i < n; i++ {
		key, err := d.str(fmt.Sprintf("metadata key #%d", i))
		if err != nil {
			return err
		}
		if _, dup := f.kvIndex[key]; dup {
			return d.errf("duplicate metadata key %q", key)
		}
		t, err := d.u32("value type of " + key)
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), key, 0)
		if err != nil {
			return err
		}
		f.kvIndex[key] = len(f.KVs)
		f.KVs = append(f.KVs, KV{Key: key, Value: v})
	}
	if v, ok := f.Get(KeyAlignment); ok {
		a, isUint := asUint(v)
		if !isUint || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return d.errf("%s = %v: must be a power of two", KeyAlignment, v.V)
		}
		f.Alignment = int(a)
	}
	return nil
}

// value decodes one value of type t for key.
func (d *decoder) value(t ValueType, key string, depth int) (Value, error) {
	what := "value of " + key
	if t >= numTypes {
		return Value{}, d.errf("key %q: unknown value type %d", key, uint32(t))
	}
	if t == TypeArray {
		return d.array(key, depth)
	}
	if t == TypeString {
		s, err := d.str(what)
		return Value{Type: t, V: s}, err
	}
	b, err := d.take(t.fixedSize(), what)
	if err != nil {
		return Value{}, err
	}
	v := Value{Type: t}
	switch t {
	case TypeUint8:
		v.V = b[0]
	case TypeInt8:
		v.V = int8(b[0])
	case TypeUint16:
		v.V = binary.LittleEndian.Uint16(b)
	case TypeInt16:
		v.V = int16(binary.LittleEndian.Uint16(b))
	case TypeUint32:
		v.V = binary.LittleEndian.Uint32(b)
	case TypeInt32:
		v.V = int32(binary.LittleEndian.Uint32(b))
	case TypeFloat32:
		v.V = math.Float32frombits(binary.LittleEndian.Uint32(b))
	case TypeBool:
		if b[0] > 1 {
			return Value{}, d.errf("key %q: bool byte %d at offset %d is neither 0 nor 1", key, b[0], d.off-1)
		}
		v.V = b[0] == 1
	case TypeUint64:
		v.V = binary.LittleEndian.Uint64(b)
	case TypeInt64:
		v.V = int64(binary.LittleEndian.Uint64(b))
	case TypeFloat64:
		v.V = math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return v, nil
}

func (d *decoder) array(key string, depth int) (Value, error) {
	if depth >= maxNesting {
		return Value{}, d.errf("key %q: arrays nested deeper than %d", key, maxNesting)
	}
	et, err := d.u32("array element type of " + key)
	if err != nil {
		return Value{}, err
	}
	t := ValueType(et)
	if t >= numTypes {
		return Value{}, d.errf("key %q: unknown array element type %d", key, et)
	}
	n, err := d.count(fmt.Sprintf("array length of %q", key), t.minSize())
	if err != nil {
		return Value{}, err
	}
	if sz := t.fixedSize(); sz > 0 {
		b, _ := d.take(n*sz, key) // count() guaranteed the bytes
		return decodeFixedArray(t, b, n, d, key)
	}
	if t == TypeString {
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str(fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return Value{}, err
			}
		}
		return arr(t, s), nil
	}
	vs := make([]Value, n)
	for i := range vs {
		if vs[i], err = d.array(key, depth+1); err != nil {
			return Value{}, err
		}
	}
	return arr(t, vs), nil
}

func decodeFixedArray(t ValueType, b []byte, n int, d *decoder, key string) (Value, error) {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return arr(t, append([]uint8(nil), b...)), nil
	case TypeInt8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(b[i])
		}
		return arr(t, s), nil
	case TypeBool:
		s := make([]bool, n)
		for i := range s {
			if b[i] > 1 {
				return Value{}, d.errf("key %q: bool array element %d is %d, neither 0 nor 1", key, i, b[i])
			}
			s[i] = b[i] == 1
		}
		return arr(t, s), nil
	case TypeUint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(b[2*i:])
		}
		return arr(t, s), nil
	case TypeInt16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(b[2*i:]))
		}
		return arr(t, s), nil
	case TypeUint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(b[4*i:])
		}
		return arr(t, s), nil
	case TypeInt32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(b[4*i:]))
		}
		return arr(t, s), nil
	case TypeFloat32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return arr(t, s), nil
	case TypeUint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(b[8*i:])
		}
		return arr(t, s), nil
	case TypeInt64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(b[8*i:]))
		}
		return arr(t, s), nil
	default: // TypeFloat64
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return arr(t, s), nil
	}
}

func (f *File) readTensorInfos(d *decoder, n int) error {
	type info struct {
		off  uint64
		size int
	}
	infos := make([]info, n)
	f.Tensors = make([]tensor.Tensor, n)
	f.tIndex = make(map[string]int, n)
	for i := 0; i < n; i++ {
		name, err := d.str(fmt.Sprintf("tensor #%d name", i))
		if err != nil {
			return err
		}
		if _, dup := f.tIndex[name]; dup {
			return d.errf("duplicate tensor name %q", name)
		}
		nd, err := d.u32("n_dims of tensor " + name)
		if err != nil {
			return err
		}
		if nd > maxDims {
			return d.errf("tensor %s: n_dims %d > %d", name, nd, maxDims)
		}
		shape := make([]int, nd)
		elems := uint64(1)
		for j := 0; j < int(nd); j++ {
			ne, err := d.u64("shape of tensor " + name)
			if err != nil {
				return err
			}
			hi, lo := bits.Mul64(elems, ne)
			if ne > 1<<60 || hi != 0 || lo > 1<<60 {
				return d.errf("tensor %s: shape overflows (dimension %d = %d)", name, j, ne)
			}
			elems = lo
			shape[int(nd)-1-j] = int(ne) // ggml ne[] is innermost first
		}
		gt, err := d.u32("type of tensor " + name)
		if err != nil {
			return err
		}
		dt, ok := tensor.FromGGML(gt)
		if !ok {
			return d.errf("tensor %s: unknown or unsupported ggml type id %d", name, gt)
		}
		off, err := d.u64("data offset of tensor " + name)
		if err != nil {
			return err
		}
		if off%uint64(f.Alignment) != 0 {
			return d.errf("tensor %s: data offset %d is not a multiple of the alignment %d", name, off, f.Alignment)
		}
		size, err := tensor.ByteSize(dt, shape)
		if err != nil {
			return d.errf("tensor %s: %v", name, err)
		}
		infos[i] = info{off, size}
		f.Tensors[i] = tensor.Tensor{Name: name, Type: dt, Shape: shape}
		f.tIndex[name] = i
	}
	start := alignUp(int64(d.off), int64(f.Alignment))
	f.DataOffset = start
	fileSize := uint64(len(d.buf))
	for i, in := range infos {
		t := &f.Tensors[i]
		begin := uint64(start) + in.off
		if in.off > fileSize || begin > fileSize || uint64(in.size) > fileSize-begin {
			return d.errf("tensor %s: data [offset %d, %d bytes] runs past end of file (size %d)",
				t.Name, begin, in.size, fileSize)
		}
		t.Data = d.buf[begin : begin+uint64(in.size) : begin+uint64(in.size)]
	}
	return nil
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }
