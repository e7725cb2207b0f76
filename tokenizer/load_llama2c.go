// VocabFromLlama2C: reads karpathy/llama2.c's tokenizer.bin (SentencePiece pieces and scores).
//
// Layout, little-endian: int32 max_token_length, then vocabSize records of
// float32 score, int32 byte length, that many bytes of piece text. The file carries no token
// types: pieces of the form <0xXX> are byte tokens, ids 0,1,2 are <unk>, <s>, </s>. llama2.c's
// exporter wrote SentencePiece's "▁" as a plain space; it is turned back into "▁" here so the
// Vocab looks like the GGUF one.

package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// VocabFromLlama2C loads a llama2.c tokenizer.bin holding vocabSize pieces. vocabSize <= 0
// reads records until the end of the file.
func VocabFromLlama2C(path string, vocabSize int) (*Vocab, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("tokenizer: %s: too short for a llama2.c tokenizer header", path)
	}
	maxLen := int(int32(binary.LittleEndian.Uint32(b)))
	if maxLen <= 0 || maxLen > 1<<16 {
		return nil, fmt.Errorf("tokenizer: %s: implausible max_token_length %d", path, maxLen)
	}
	v := &Vocab{Model: "llama", Pre: "default", BOS: 1, EOS: 2, UNK: 0, PAD: -1, EOT: -1,
		AddBOS: true, AddSpacePrefix: true}
	off := 4
	for i := 0; vocabSize <= 0 || i < vocabSize; i++ {
		if vocabSize <= 0 && off == len(b) {
			break
		}
		if off+8 > len(b) {
			return nil, fmt.Errorf("tokenizer: %s: truncated at token %d (offset %d)", path, i, off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
		n := int(int32(binary.LittleEndian.Uint32(b[off+4:])))
		off += 8
		if n < 0 || n > maxLen || off+n > len(b) {
			return nil, fmt.Errorf("tokenizer: %s: token %d has bad length %d (offset %d)", path, i, n, off-4)
		}
		v.Tokens = append(v.Tokens, strings.ReplaceAll(string(b[off:off+n]), " ", spmSpace))
		v.Scores = append(v.Scores, score)
		off += n
	}
	if len(v.Tokens) < 3 {
		return nil, fmt.Errorf("tokenizer: %s: only %d tokens", path, len(v.Tokens))
	}
	v.Types = make([]int32, len(v.Tokens))
	for i, t := range v.Tokens {
		switch {
		case i == 0:
			v.Types[i] = TypeUnknown
		case i == 1 || i == 2:
			v.Types[i] = TypeControl
		case isBytePiece(t):
			v.Types[i] = TypeByte
		default:
			v.Types[i] = TypeNormal
		}
	}
	return v, nil
}

// isBytePiece reports whether s has the form <0xXX> with two upper-case hex digits.
func isBytePiece(s string) bool {
	_, ok := parseBytePiece(s)
	return ok
}

// parseBytePiece decodes "<0xXX>" to its byte.
func parseBytePiece(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var x byte
	for _, c := range []byte(s[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			x = x<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			x = x<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			x = x<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return x, true
}
