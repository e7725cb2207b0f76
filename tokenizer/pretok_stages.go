// Pre-tokenizer stages without look-ahead (the ones llama.cpp runs through std::regex):
// each is an anchored matcher tried at every position, leftmost first; text between matches
// stays as its own piece. Also the table from pre-tokenizer name to stage list.

package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// stage splits one piece (as runes) into sub-piece lengths that sum to len(cps).
type stage func(cps []rune) []int

// matcher returns the length of a match anchored at i, or 0.
type matcher func(cps []rune, i int) int

// regexStage turns a matcher into a stage with regex-iterator semantics.
func regexStage(m matcher) stage {
	return func(cps []rune) []int {
		var out []int
		gap := 0
		for i := 0; i < len(cps); {
			n := m(cps, i)
			if n == 0 {
				gap++
				i++
				continue
			}
			if gap > 0 {
				out = append(out, gap)
				gap = 0
			}
			out = append(out, n)
			i += n
		}
		if gap > 0 {
			out = append(out, gap)
		}
		return out
	}
}

// run matches class+ (plus=true) or a single class character.
func run(class func(rune) bool, plus bool) matcher {
	return func(cps []rune, i int) int {
		n := 0
		for class(at(cps, i+n)) {
			n++
			if !plus {
				break
			}
		}
		return n
	}
}

// spaceThen matches \s?class+.
func spaceThen(class func(rune) bool) matcher {
	r := run(class, true)
	return func(cps []rune, i int) int {
		if isSpace(at(cps, i)) {
			if n := r(cps, i+1); n > 0 {
				return n + 1
			}
		}
		return r(cps, i)
	}
}

// trailingSpace matches \s+$.
func trailingSpace(cps []rune, i int) int {
	n := spaceRun(cps, i)
	if n > 0 && i+n == len(cps) {
		return n
	}
	return 0
}

// threeDigits matches [0-9][0-9][0-9].
func threeDigits(cps []rune, i int) int {
	for k := 0; k < 3; k++ {
		if r := at(cps, i+k); r < '0' || r > '9' {
			return 0
		}
	}
	return 3
}

// charClass is a set of rune ranges written like a regex bracket body, e.g. "A-Za-zµ".
type charClass [][2]rune

func parseClass(s string) charClass {
	rs := []rune(s)
	var c charClass
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			c = append(c, [2]rune{rs[i], rs[i+2]})
			i += 2
			continue
		}
		c = append(c, [2]rune{rs[i], rs[i]})
	}
	return c
}

func (c charClass) has(r rune) bool {
	for _, x := range c {
		if r >= x[0] && r <= x[1] {
			return true
		}
	}
	return false
}

var (
	cjkClass = parseClass("一-龥ࠀ-一가-퟿")
	// Letters of the DeepSeek LLM pre-tokenizer (Latin, Greek, Cyrillic, Armenian, Georgian,
	// Cherokee, Glagolitic, Coptic, full-width Latin, Deseret, Osage, Old Hungarian, Warang Citi,
	// Adlam ... cased letters).
	deepseekLetters = parseClass("A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃")
	deepseekPunct   = parseClass("!-/:-~！-／：-～‘-‟　-。")
)

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// isFalconPunct is [\p{P}\$\+<=>\^~\|].
func isFalconPunct(r rune) bool { return isPunct(r) || r >= 0 && strings.ContainsRune("$+<=>^~|", r) }

// preTokenizer returns the stages for a GGUF tokenizer.ggml.pre name.
func preTokenizer(name string) ([]stage, error) {
	gpt2 := stage(splitGPT2)
	switch name {
	case "gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", "roberta-bpe", "jina-es", "jina-de",
		"jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "gigachat":
		return []stage{gpt2}, nil
	case "llama-bpe", "llama3", "llama-v3", "falcon3", "dbrx", "smaug-bpe", "chatglm-bpe":
		return []stage{func(c []rune) []int { return splitLlama3(c, 3) }}, nil
	case "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez":
		return []stage{func(c []rune) []int { return splitLlama3(c, 1) }}, nil
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return []stage{regexStage(run(isNumber, false)), gpt2}, nil
	case "falcon":
		return []stage{regexStage(run(isFalconPunct, true)), gpt2, regexStage(threeDigits)}, nil
	case "deepseek-coder":
		return []stage{
			regexStage(run(isCRLF, false)),
			regexStage(spaceThen(isLetter)),
			regexStage(spaceThen(isPunct)),
			regexStage(run(cjkClass.has, true)),
			regexStage(run(isNumber, false)),
		}, nil
	case "deepseek-llm":
		return []stage{
			regexStage(run(isCRLF, false)),
			regexStage(spaceThen(deepseekLetters.has)),
			regexStage(spaceThen(deepseekPunct.has)),
			regexStage(trailingSpace),
			regexStage(run(cjkClass.has, true)),
			regexStage(run(isNumber, true)),
		}, nil
	case "default", "":
		return []stage{
			regexStage(run(isFalconPunct, true)),
			gpt2,
			regexStage(run(isNumber, true)),
			regexStage(threeDigits),
		}, nil
	}
	return nil, fmt.Errorf("tokenizer: unknown pre-tokenizer %q", name)
}

// preSplit applies the stages to text and returns the pieces as substrings of text (so bytes
// of invalid UTF-8 are kept; each invalid byte counts as one U+FFFD character).
func preSplit(stages []stage, text string) []string {
	cps := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		cps = append(cps, r)
		offs = append(offs, i)
		i += n
	}
	offs = append(offs, len(text))
	lens := []int{len(cps)}
	for _, st := range stages {
		var next []int
		start := 0
		for _, n := range lens {
			next = append(next, st(cps[start:start+n])...)
			start += n
		}
		lens = next
	}
	out := make([]string, 0, len(lens))
	start := 0
	for _, n := range lens {
		if n > 0 {
			out = append(out, text[offs[start]:offs[start+n]])
		}
		start += n
	}
	return out
}

// PreTokenize splits text with the pre-tokenizer named pre (a GGUF tokenizer.ggml.pre name such
// as "gpt-2", "llama-bpe", "qwen2") into the pieces byte-level BPE merges within; the pieces are
// substrings of text and concatenate to it.
func PreTokenize(pre, text string) ([]string, error) {
	stages, err := preTokenizer(pre)
	if err != nil {
		return nil, err
	}
	return preSplit(stages, text), nil
}
