// MarshalHFJSON: a Vocab as a Hugging Face tokenizer.json, and HFConfig, the matching
// tokenizer_config.json. A byte-level BPE ("gpt2") vocabulary gets the BPE model with vocab
// and merges, the ByteLevel pre-tokenizer — preceded by the Split regex of the vocabulary's
// pre-tokenizer when it has one —, ByteLevel decoder and its added tokens. SentencePiece
// vocabularies ("llama", "t5") are written in the SentencePiece style (write_hfspm.go).
// WordPiece ("bert") is refused: VocabFromHFJSON does not read it, so such a file could not be
// checked by a round trip. Used by convert (model export) and tokenizer training.

package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmcloud/llmcloud/format/hfdir"
)

// splitRegex is the tokenizer.json Split pattern of each supported pre-tokenizer name.
var splitRegex = map[string]string{
	"llama-bpe": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"qwen2":     `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

type jsonObj = map[string]any // a JSON object, keys written sorted

// MarshalHFJSON renders v as tokenizer.json.
func MarshalHFJSON(v *Vocab) ([]byte, error) {
	if v.spm() {
		return marshalSPMJSON(v)
	}
	if v.Model != "gpt2" {
		return nil, fmt.Errorf("tokenizer.json: a %q vocabulary is not supported (byte-level BPE \"gpt2\", SentencePiece \"llama\" and \"t5\"); write GGUF to keep this tokenizer", v.Model)
	}
	byteLevel := func(regex bool) jsonObj {
		return jsonObj{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": regex}
	}
	var pre jsonObj
	switch v.Pre {
	case "gpt-2":
		pre = byteLevel(true)
	case "llama-bpe", "qwen2":
		pre = jsonObj{"type": "Sequence", "pretokenizers": []any{
			jsonObj{"type": "Split", "pattern": jsonObj{"Regex": splitRegex[v.Pre]}, "behavior": "Isolated", "invert": false},
			byteLevel(false),
		}}
	default:
		return nil, fmt.Errorf("tokenizer.json: pre-tokenizer %q is not supported (gpt-2, llama-bpe, qwen2)", v.Pre)
	}
	var normalizer any
	if v.Normalize == "NFC" {
		normalizer = jsonObj{"type": "NFC"}
	}
	var added []any
	vocab := &orderedVocab{}
	seen := map[string]int{}
	for id, tok := range v.Tokens {
		typ := int32(TypeNormal)
		if v.Types != nil {
			typ = v.Types[id]
		}
		if typ == TypeUnused && tok == fmt.Sprintf("[PAD%d]", id) {
			continue // a hole in the id space; the reader recreates the placeholder
		}
		if prev, dup := seen[tok]; dup {
			return nil, fmt.Errorf("tokenizer.json: token %q has two ids, %d and %d", tok, prev, id)
		}
		seen[tok] = id
		switch typ {
		case TypeControl, TypeUserDefined, TypeUnknown:
			special := typ != TypeUserDefined
			added = append(added, jsonObj{"id": id, "content": tok, "single_word": false,
				"lstrip": v.LStrip[id], "rstrip": v.RStrip[id], "normalized": !special, "special": special})
		default:
			vocab.add(tok, id)
		}
	}
	var post any = byteLevel(false)
	post.(jsonObj)["trim_offsets"] = false
	if p := bosTemplate(v); p != nil {
		post = p
	}
	merges := v.Merges
	if merges == nil {
		merges = []string{}
	}
	if added == nil {
		added = []any{}
	}
	doc := jsonObj{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post,
		"decoder": byteLevel(true),
		"model": jsonObj{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false,
			"ignore_merges": v.IgnoreMerges, "vocab": vocab, "merges": merges},
	}
	return encodeHFJSON(doc)
}

// encodeHFJSON renders doc indented, without HTML escapes.
func encodeHFJSON(doc jsonObj) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return b.Bytes(), nil
}

// bosTemplate is the TemplateProcessing post-processor that puts BOS first, nil when the
// vocabulary adds none.
func bosTemplate(v *Vocab) any {
	if !v.AddBOS || v.BOS < 0 {
		return nil
	}
	bos := v.Tokens[v.BOS]
	return jsonObj{"type": "TemplateProcessing",
		"single": []any{jsonObj{"SpecialToken": jsonObj{"id": bos, "type_id": 0}}, jsonObj{"Sequence": jsonObj{"id": "A", "type_id": 0}}},
		"pair": []any{jsonObj{"SpecialToken": jsonObj{"id": bos, "type_id": 0}}, jsonObj{"Sequence": jsonObj{"id": "A", "type_id": 0}},
			jsonObj{"SpecialToken": jsonObj{"id": bos, "type_id": 1}}, jsonObj{"Sequence": jsonObj{"id": "B", "type_id": 1}}},
		"special_tokens": jsonObj{bos: jsonObj{"id": bos, "ids": []int{v.BOS}, "tokens": []string{bos}}},
	}
}

// orderedVocab marshals a token -> id object in id order, as Hugging Face writes it.
type orderedVocab struct {
	toks []string
	ids  []int
}

func (o *orderedVocab) add(tok string, id int) {
	o.toks, o.ids = append(o.toks, tok), append(o.ids, id)
}

func (o *orderedVocab) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, t := range o.toks {
		if i > 0 {
			b.WriteByte(',')
		}
		var kb bytes.Buffer
		enc := json.NewEncoder(&kb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return nil, err
		}
		b.Write(bytes.TrimRight(kb.Bytes(), "\n"))
		fmt.Fprintf(&b, ":%d", o.ids[i])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// HFConfig is the tokenizer_config.json that goes with MarshalHFJSON(v); chatTemplate may be
// empty, ctxLen 0 when unknown.
func HFConfig(v *Vocab, chatTemplate string, ctxLen int) *hfdir.TokenizerConfig {
	name := func(id int) string {
		if id >= 0 && id < len(v.Tokens) {
			return v.Tokens[id]
		}
		return ""
	}
	addBOS, addEOS := v.AddBOS, v.AddEOS
	tc := &hfdir.TokenizerConfig{ChatTemplate: chatTemplate, BOSToken: name(v.BOS), EOSToken: name(v.EOS),
		PADToken: name(v.PAD), UNKToken: name(v.UNK), AddBOSToken: &addBOS, AddEOSToken: &addEOS,
		Raw: map[string]any{"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": false}}
	if ctxLen > 0 {
		tc.ModelMaxLength = float64(ctxLen)
	}
	return tc
}
