// VocabFromSentencePiece: reads a SentencePiece tokenizer.model (a ModelProto protobuf): the
// pieces with their scores and types, the model type (BPE -> "llama", Unigram -> "t5"), the
// special ids and add_dummy_prefix. Only the fields named here are read; a normalizer with
// a precompiled character map (nmt_nfkc and the like) is refused, as it is not applied.

package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// protoField is one field of a protobuf message: number, wire type, and its varint or bytes.
type protoField struct {
	num, wire int
	u         uint64
	b         []byte
}

// protoFields splits a protobuf message into its fields.
func protoFields(b []byte) ([]protoField, error) {
	var out []protoField
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad field key")
		}
		b = b[n:]
		f := protoField{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.u, n = binary.Uvarint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return nil, errors.New("truncated fixed64")
			}
			f.u, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("truncated fixed32")
			}
			f.u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, errors.New("bad length")
			}
			f.b, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return nil, fmt.Errorf("unsupported wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// VocabFromSentencePiece loads a SentencePiece model file.
func VocabFromSentencePiece(path string) (*Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	bad := func(err error) error { return fmt.Errorf("tokenizer: %s: not a SentencePiece model: %v", path, err) }
	fields, err := protoFields(b)
	if err != nil {
		return nil, bad(err)
	}
	v := &Vocab{Model: "t5", Pre: "default", BOS: 1, EOS: 2, UNK: 0, PAD: -1, EOT: -1, AddBOS: true, AddSpacePrefix: true}
	for _, f := range fields {
		if f.wire != 2 {
			continue
		}
		sub, err := protoFields(f.b)
		if err != nil {
			return nil, bad(err)
		}
		switch f.num {
		case 1: // SentencePiece {1: piece, 2: score, 3: type}
			piece, score, typ := "", float32(0), int32(TypeNormal)
			for _, g := range sub {
				switch g.num {
				case 1:
					piece = string(g.b)
				case 2:
					score = math.Float32frombits(uint32(g.u))
				case 3:
					typ = int32(g.u)
				}
			}
			v.Tokens, v.Scores, v.Types = append(v.Tokens, piece), append(v.Scores, score), append(v.Types, typ)
		case 2: // TrainerSpec {3: model_type, 40: unk_id, 41: bos_id, 42: eos_id, 43: pad_id}
			for _, g := range sub {
				id := int(int32(g.u))
				switch g.num {
				case 3:
					switch g.u {
					case 1:
						v.Model = "t5"
					case 2:
						v.Model = "llama"
					default:
						return nil, fmt.Errorf("tokenizer: %s: SentencePiece model type %d is not supported (Unigram or BPE)", path, g.u)
					}
				case 40:
					v.UNK = id
				case 41:
					v.BOS = id
				case 42:
					v.EOS = id
				case 43:
					v.PAD = id
				}
			}
		case 3: // NormalizerSpec {1: name, 2: precompiled_charsmap, 3: add_dummy_prefix}
			for _, g := range sub {
				switch {
				case g.num == 2 && len(g.b) > 0:
					return nil, fmt.Errorf("tokenizer: %s: SentencePiece normalization with a character map is not supported", path)
				case g.num == 3:
					v.AddSpacePrefix = g.u != 0
				}
			}
		}
	}
	if len(v.Tokens) == 0 {
		return nil, bad(errors.New("no pieces"))
	}
	for _, id := range []*int{&v.BOS, &v.EOS, &v.UNK, &v.PAD} {
		if *id >= len(v.Tokens) {
			*id = -1
		}
	}
	v.AddBOS = v.BOS >= 0
	return v, nil
}
