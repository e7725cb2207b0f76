// This file is the wire format of one KV transfer: a header naming the block layout, the
// blocks one frame each, and a trailer. Every integer is little-endian.
//
//	header:  "LLKV" | version u16 (1) | reserved u16 (0) | layers u32 | block_size u32 |
//	         k_row_bytes u32 | v_row_bytes u32 | dtype_len u8 | dtype | num_blocks u32 |
//	         crc32 of the header bytes before it (IEEE) u32
//	block:   index u32 | length u32 | payload | crc32 of the payload u32
//	trailer: "LLKE" | num_blocks u32
//
// A reader checks the magic, the version, the header's checksum, that the layout is the one it
// wants, each block's index, length and checksum, and the trailer; a stream that ends early is
// an error naming the block it ended in. Blocks are written and read one at a time, so a
// transfer streams over the socket in block-sized chunks.

package kvtransfer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Version is the wire format's version.
const Version = 1

var (
	headerMagic  = [4]byte{'L', 'L', 'K', 'V'}
	trailerMagic = [4]byte{'L', 'L', 'K', 'E'}
)

// maxBlockBytes bounds a block a reader accepts before reading it (a corrupt length must not
// allocate gigabytes).
const maxBlockBytes = 1 << 30

// Layout is the shape of one KV block (model.BlockLayout's fields, repeated here so that the
// router can import this package without the model).
type Layout struct {
	Layers    int
	BlockSize int    // token slots per block
	KRowBytes int    // one token's K row in one layer
	VRowBytes int    // one token's V row in one layer
	DType     string // the KV cache's type name (fp32, fp16, q8_0, ...)
}

// BlockBytes is the size of one block.
func (l Layout) BlockBytes() int { return l.Layers * l.BlockSize * (l.KRowBytes + l.VRowBytes) }

func (l Layout) String() string {
	return fmt.Sprintf("%d layers x %d tokens, K %d B + V %d B per row, %s", l.Layers, l.BlockSize, l.KRowBytes, l.VRowBytes, l.DType)
}

// ErrCorrupt marks a stream that is not a valid transfer (bad magic, checksum, index, length);
// a stream cut short is io.ErrUnexpectedEOF.
var ErrCorrupt = errors.New("kvtransfer: corrupt stream")

// Writer writes one transfer.
type Writer struct {
	w       *bufio.Writer
	l       Layout
	n, sent int
}

// NewWriter writes the header of a transfer of n blocks of layout l to w.
func NewWriter(w io.Writer, l Layout, n int) (*Writer, error) {
	if len(l.DType) > 255 {
		return nil, fmt.Errorf("kvtransfer: dtype name %q longer than 255 bytes", l.DType)
	}
	h := headerMagic[:]
	h = binary.LittleEndian.AppendUint16(h, Version)
	h = binary.LittleEndian.AppendUint16(h, 0)
	for _, v := range []int{l.Layers, l.BlockSize, l.KRowBytes, l.VRowBytes} {
		h = binary.LittleEndian.AppendUint32(h, uint32(v))
	}
	h = append(h, byte(len(l.DType)))
	h = append(h, l.DType...)
	h = binary.LittleEndian.AppendUint32(h, uint32(n))
	h = binary.LittleEndian.AppendUint32(h, crc32.ChecksumIEEE(h))
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(h); err != nil {
		return nil, err
	}
	return &Writer{w: bw, l: l, n: n}, nil
}

// WriteBlock writes the next block.
func (w *Writer) WriteBlock(b []byte) error {
	if w.sent >= w.n {
		return fmt.Errorf("kvtransfer: block %d of a transfer of %d", w.sent, w.n)
	}
	if len(b) != w.l.BlockBytes() {
		return fmt.Errorf("kvtransfer: block %d is %d bytes, the layout's are %d", w.sent, len(b), w.l.BlockBytes())
	}
	var f [8]byte
	binary.LittleEndian.PutUint32(f[:], uint32(w.sent))
	binary.LittleEndian.PutUint32(f[4:], uint32(len(b)))
	if _, err := w.w.Write(f[:]); err != nil {
		return err
	}
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	if _, err := w.w.Write(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))); err != nil {
		return err
	}
	w.sent++
	return nil
}

// Flush sends what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// Close writes the trailer (after every block) and flushes.
func (w *Writer) Close() error {
	if w.sent != w.n {
		return fmt.Errorf("kvtransfer: closing after %d of %d blocks", w.sent, w.n)
	}
	t := binary.LittleEndian.AppendUint32(trailerMagic[:], uint32(w.n))
	if _, err := w.w.Write(t); err != nil {
		return err
	}
	return w.w.Flush()
}

// Reader reads one transfer.
type Reader struct {
	r      *bufio.Reader
	l      Layout
	n, got int
	Bytes  int64 // read so far, framing included
}

// NewReader reads and checks a transfer's header: its layout must equal want.
func NewReader(r io.Reader, want Layout) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 64<<10)}
	fixed := make([]byte, 4+2+2+16+1)
	if err := rd.full(fixed, "header"); err != nil {
		return nil, err
	}
	if [4]byte(fixed[:4]) != headerMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, fixed[:4], headerMagic[:])
	}
	if v := binary.LittleEndian.Uint16(fixed[4:]); v != Version {
		return nil, fmt.Errorf("%w: version %d, this reader speaks %d", ErrCorrupt, v, Version)
	}
	rest := make([]byte, int(fixed[24])+8)
	if err := rd.full(rest, "header"); err != nil {
		return nil, err
	}
	h := append(fixed, rest[:len(rest)-4]...)
	if sum := binary.LittleEndian.Uint32(rest[len(rest)-4:]); sum != crc32.ChecksumIEEE(h) {
		return nil, fmt.Errorf("%w: header checksum %08x, computed %08x", ErrCorrupt, sum, crc32.ChecksumIEEE(h))
	}
	u := func(i int) int { return int(binary.LittleEndian.Uint32(fixed[8+4*i:])) }
	rd.l = Layout{Layers: u(0), BlockSize: u(1), KRowBytes: u(2), VRowBytes: u(3), DType: string(rest[:fixed[24]])}
	rd.n = int(binary.LittleEndian.Uint32(rest[fixed[24]:]))
	if rd.l != want {
		return nil, fmt.Errorf("kvtransfer: the sender's KV layout (%v) is not ours (%v)", rd.l, want)
	}
	if rd.l.BlockBytes() > maxBlockBytes {
		return nil, fmt.Errorf("%w: blocks of %d bytes", ErrCorrupt, rd.l.BlockBytes())
	}
	return rd, nil
}

// Len is the number of blocks the header announces.
func (r *Reader) Len() int { return r.n }

// Next reads the next block, or returns io.EOF after the last one (the trailer checked).
func (r *Reader) Next() ([]byte, error) {
	if r.got == r.n {
		var t [8]byte
		if err := r.full(t[:], "trailer"); err != nil {
			return nil, err
		}
		if [4]byte(t[:4]) != trailerMagic || int(binary.LittleEndian.Uint32(t[4:])) != r.n {
			return nil, fmt.Errorf("%w: bad trailer %x after %d blocks", ErrCorrupt, t, r.n)
		}
		return nil, io.EOF
	}
	where := fmt.Sprintf("block %d of %d", r.got, r.n)
	var f [8]byte
	if err := r.full(f[:], where); err != nil {
		return nil, err
	}
	if i := int(binary.LittleEndian.Uint32(f[:])); i != r.got {
		return nil, fmt.Errorf("%w: %s has index %d", ErrCorrupt, where, i)
	}
	if n := int(binary.LittleEndian.Uint32(f[4:])); n != r.l.BlockBytes() {
		return nil, fmt.Errorf("%w: %s is %d bytes, the layout's are %d", ErrCorrupt, where, n, r.l.BlockBytes())
	}
	b := make([]byte, r.l.BlockBytes()+4)
	if err := r.full(b, where); err != nil {
		return nil, err
	}
	b, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if got := crc32.ChecksumIEEE(b); got != sum {
		return nil, fmt.Errorf("%w: %s checksum %08x, computed %08x", ErrCorrupt, where, sum, got)
	}
	r.got++
	return b, nil
}

// full reads len(b) bytes; a stream ending early is io.ErrUnexpectedEOF, named with where.
func (r *Reader) full(b []byte, where string) error {
	n, err := io.ReadFull(r.r, b)
	r.Bytes += int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("kvtransfer: stream ended in the %s after %d bytes: %w", where, r.Bytes, err)
	}
	return nil
}
