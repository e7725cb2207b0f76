// Package tokenizer turns text into token ids and back for the model families llmcloud serves.
//
// Four tokenizer kinds share one format-neutral description, Vocab, which every loader
// produces (GGUF tokenizer.ggml.* keys, Hugging Face tokenizer.json, GPT-2 vocab.json +
// merges.txt, SentencePiece tokenizer.model, llama2.c tokenizer.bin; OpenVocab picks by the
// file) and which the GGUF and tokenizer.json writers consume (docs/formats/tokenizer.md):
//
//   - "llama": SentencePiece BPE as llama.cpp runs it. Spaces become U+2581 "▁", one "▁" is
//     prepended when AddSpacePrefix is set (at the start of the text and after every special
//     token that was split out), then adjacent symbols are merged greedily, always the pair
//     whose merged piece has the highest score (ties: leftmost). Symbols left that are not in
//     the vocabulary fall back to their bytes as <0xXX> tokens. A vocabulary read from a
//     tokenizer.json (BPE with byte_fallback) keeps its merges, and then the pair with the
//     lowest merge rank is merged first, as Hugging Face does.
//   - "t5": SentencePiece Unigram. Spaces and the prefix as for "llama"; each word is segmented
//     by a Viterbi search maximizing the sum of piece scores (see unigram.go), unknown
//     characters fall back to <0xXX> tokens.
//   - "gpt2": byte-level BPE (GPT-2, Llama 3, Qwen2, DeepSeek, Falcon, MPT, StarCoder, ...).
//     The text is split by the pre-tokenizer named in Vocab.Pre, every byte of a piece is mapped
//     to a printable rune (GPT-2's bytes_to_unicode table), and merges are applied by rank
//     (lowest rank first, ties leftmost). Decoding maps the runes back to bytes.
//   - "bert": WordPiece as llama.cpp runs it (NFD, lower case, split at white space and around
//     punctuation and CJK ideographs, greedy longest match of "▁"+word). Encode with addSpecial
//     gives [CLS] ... [SEP] (SEP is stored as EOS). Decoding turns "▁" into spaces, nothing more.
//
// # Pre-tokenizers
//
// Go's regexp has no look-ahead, so every pre-tokenizer is a small hand-written matcher that
// reproduces the regular expression it is named after (see pretok_*.go). A pre-tokenizer is a
// list of stages; each stage splits every piece produced by the previous one, and text a stage
// does not match stays as its own piece (llama.cpp's unicode_regex_split semantics):
//
//	gpt-2, mpt, default-like:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//	llama-bpe (Llama 3):       (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	                           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen2:                     as llama-bpe with \p{N} (single digits)
//	starcoder, refact:         \p{N} ; then gpt-2
//	falcon:                    [\p{P}$+<=>^~|]+ ; gpt-2 ; [0-9][0-9][0-9]
//	deepseek-coder:            [\r\n] ; \s?\p{L}+ ; \s?\p{P}+ ; [一-龥ࠀ-一가-퟿]+ ; \p{N}
//	deepseek-llm:              [\r\n] ; \s?[Latin/Greek/Cyrillic/... letters]+ ;
//	                           \s?[!-/:-~！-／：-～‘-‟　-。]+ ; \s+$ ; [一-龥ࠀ-一가-퟿]+ ; \p{N}+
//	default:                   [\p{P}$+<=>^~|]+ ; gpt-2 ; \p{N}+ ; [0-9][0-9][0-9]
//
// \p{L}, \p{N}, \p{P} are Unicode general categories (Go's unicode tables); \s is Unicode
// white space. When Vocab.Normalize is "NFC" (tokenizer.json asked for it) the text between
// special tokens is NFC-normalized first.
//
// # Special tokens
//
// Control (type 3), unknown (2) and user-defined (4) tokens are split out of the text before
// pre-tokenization, longest first. With parseSpecial=false control and unknown tokens are left in
// the text as plain characters; user-defined tokens are always split out (llama.cpp and Hugging
// Face behave the same way). LStrip/RStrip flags swallow white space next to the token.
//
// # Decoding
//
// Piece(id) gives the bytes of one token as llama.cpp's token_to_piece(special=false): control
// and unknown tokens give nothing, user-defined tokens give their text, SentencePiece pieces have
// "▁" turned back into spaces and <0xXX> pieces give that byte, byte-level pieces are mapped back
// through the bytes_to_unicode table. Decode concatenates pieces, with one rule: for
// SentencePiece vocabularies with AddSpacePrefix, when ids[0] is BOS the single leading space
// of the piece right after it is removed (that space is the one Encode added), so
// Decode(Encode(x, true, false)) == x. Without a leading BOS nothing is stripped, which is what
// llama.cpp prints for generated continuations. No other clean-up is done.
//
// # Streaming
//
// A Decoder turns ids into text one at a time for streaming responses. Add returns only text
// that is final: if the bytes so far end in an incomplete UTF-8 sequence (a multi-byte
// character split over several <0xXX> or byte-level tokens) those trailing bytes are held back
// until the sequence completes; bytes that can never become valid UTF-8 are passed through at
// once. Flush returns whatever is held. The concatenation of all Add results and Flush equals
// Decode of the same ids.
package tokenizer
