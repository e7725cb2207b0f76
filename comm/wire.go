// The control wire format shared by the store and the per-process listener: one frame is
//
//	type u8 | keyLen u32 LE | key | valLen u32 LE | val
//
// with key at most maxKeyBytes and val at most maxValBytes (docs/comm.md lists the types).
package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	maxKeyBytes = 4 << 10
	maxValBytes = 16 << 20
)

// Frame types. Store requests: set, get (waits for the key), add (int64 counter).
// Store replies: value, error. Listener: hello (mesh connection), status query, abort, bye.
const (
	frameSet    byte = 'S'
	frameGet    byte = 'G'
	frameAdd    byte = 'A'
	frameValue  byte = 'V'
	frameError  byte = 'E'
	frameHello  byte = 'H' // key = "<gid>/<kind>", val = sender's group rank (decimal)
	frameStatus byte = 'Q' // key = gid; reply frameValue with the encoded status
	frameAbort  byte = 'X' // over a control connection: val = reason
	frameBye    byte = 'B' // over a control connection: orderly close
)

var validFrameTypes = map[byte]bool{frameSet: true, frameGet: true, frameAdd: true, frameValue: true,
	frameError: true, frameHello: true, frameStatus: true, frameAbort: true, frameBye: true}

type frame struct {
	typ byte
	key string
	val []byte
}

// appendFrame encodes f after b.
func appendFrame(b []byte, f frame) []byte {
	b = append(b, f.typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.key)))
	b = append(b, f.key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.val)))
	return append(b, f.val...)
}

func writeFrame(w io.Writer, f frame) error {
	if len(f.key) > maxKeyBytes || len(f.val) > maxValBytes {
		return fmt.Errorf("comm: frame too large (key %d B, value %d B)", len(f.key), len(f.val))
	}
	_, err := w.Write(appendFrame(nil, f))
	return err
}

var errBadFrame = errors.New("comm: malformed frame")

// readFrame decodes one frame; a bad type or oversized field is an error, never a panic
// or a huge allocation.
func readFrame(r io.Reader) (frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	f := frame{typ: hdr[0]}
	if !validFrameTypes[f.typ] {
		return frame{}, fmt.Errorf("%w: unknown type 0x%02x", errBadFrame, f.typ)
	}
	keyLen := binary.LittleEndian.Uint32(hdr[1:])
	if keyLen > maxKeyBytes {
		return frame{}, fmt.Errorf("%w: key of %d bytes", errBadFrame, keyLen)
	}
	key := make([]byte, keyLen)
	if _, err := io.ReadFull(r, key); err != nil {
		return frame{}, unexpected(err)
	}
	f.key = string(key)
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return frame{}, unexpected(err)
	}
	valLen := binary.LittleEndian.Uint32(hdr[:4])
	if valLen > maxValBytes {
		return frame{}, fmt.Errorf("%w: value of %d bytes", errBadFrame, valLen)
	}
	f.val = make([]byte, valLen)
	if _, err := io.ReadFull(r, f.val); err != nil {
		return frame{}, unexpected(err)
	}
	return f, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
