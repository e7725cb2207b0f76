// SentencePiece vocabularies as tokenizer.json, in the form Llama 2, Mistral and TinyLlama
// ship: normalizer Prepend("▁") (when a space is prefixed) + Replace(" ", "▁"), no
// pre-tokenizer, decoder Replace("▁", " ") + ByteFallback + Fuse + Strip(1 leading space),
// and the model BPE with byte_fallback ("llama"; the merges are the vocabulary's own, or made
// from the scores as Hugging Face's converter does) or Unigram with the scores ("t5"). A
// vocabulary read from a Metaspace file keeps its Metaspace pre-tokenizer instead.

package tokenizer

import (
	"fmt"
	"strings"
)

func marshalSPMJSON(v *Vocab) ([]byte, error) {
	var added []any
	hasBytes := false
	for id, tok := range v.Tokens {
		switch typ := v.tokenType(id); typ {
		case TypeControl, TypeUserDefined, TypeUnknown:
			special := typ != TypeUserDefined
			added = append(added, jsonObj{"id": id, "content": tok, "single_word": false,
				"lstrip": v.LStrip[id], "rstrip": v.RStrip[id], "normalized": !special, "special": special})
		case TypeByte:
			hasBytes = true
		}
	}
	if added == nil {
		added = []any{}
	}
	replace := func(from, to string) jsonObj {
		return jsonObj{"type": "Replace", "pattern": jsonObj{"String": from}, "content": to}
	}
	var normalizer, pre any
	strip := v.AddSpacePrefix
	if v.Metaspace == "" {
		var seq []any
		if v.AddSpacePrefix {
			seq = append(seq, jsonObj{"type": "Prepend", "prepend": spmSpace})
		}
		normalizer = jsonObj{"type": "Sequence", "normalizers": append(seq, replace(" ", spmSpace))}
	} else {
		pre = jsonObj{"type": "Metaspace", "replacement": spmSpace, "prepend_scheme": v.Metaspace, "split": v.MetaspaceSplit}
		strip = v.Metaspace != "never"
	}
	decoders := []any{replace(spmSpace, " "), jsonObj{"type": "ByteFallback"}, jsonObj{"type": "Fuse"}}
	if strip {
		decoders = append(decoders, jsonObj{"type": "Strip", "content": " ", "start": 1, "stop": 0})
	}
	var unk any
	if v.UNK >= 0 {
		unk = v.Tokens[v.UNK]
	}
	var model jsonObj
	if v.Model == "t5" {
		pieces := make([]any, len(v.Tokens))
		for i, tok := range v.Tokens {
			pieces[i] = []any{tok, float64(v.score(i))}
		}
		var unkID any
		if v.UNK >= 0 {
			unkID = v.UNK
		}
		model = jsonObj{"type": "Unigram", "unk_id": unkID, "vocab": pieces, "byte_fallback": hasBytes}
	} else {
		vocab := &orderedVocab{}
		seen := map[string]int{}
		for id, tok := range v.Tokens {
			if prev, dup := seen[tok]; dup {
				return nil, fmt.Errorf("tokenizer.json: token %q has two ids, %d and %d", tok, prev, id)
			}
			seen[tok] = id
			vocab.add(tok, id)
		}
		merges := v.Merges
		if merges == nil {
			merges = spmMerges(v)
		}
		// "a b" strings, or [a, b] pairs when a piece has a space in it
		var ms any = merges
		for _, m := range merges {
			if strings.Count(m, " ") != 1 {
				pairs := make([][2]string, len(merges))
				for i, m := range merges {
					sp := indexSpace(m)
					pairs[i] = [2]string{m[:sp], m[min(sp+1, len(m)):]}
				}
				ms = pairs
				break
			}
		}
		model = jsonObj{"type": "BPE", "dropout": nil, "unk_token": unk, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
			"vocab": vocab, "merges": ms}
	}
	return encodeHFJSON(jsonObj{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": normalizer, "pre_tokenizer": pre, "post_processor": bosTemplate(v),
		"decoder": jsonObj{"type": "Sequence", "decoders": decoders},
		"model":   model,
	})
}
