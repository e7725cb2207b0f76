// Datasets: the requests a benchmark sends. Every generator is seeded, so the same flags give
// the same prompts. Prompt lengths are counted with a TokenCounter (a real tokenizer when
// --tokenizer is given, else an estimate; see docs/bench.md).

package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Request is one prompt to send.
type Request struct {
	Prompt       string
	PromptTokens int // as counted by the dataset's tokenizer (or estimated)
	OutputTokens int // max_tokens asked of the server
}

// Tokens is what datasets need of a tokenizer: counting, and for random prompts making text of
// a given token count. Wordlist (no tokenizer) and HFTokens implement it.
type Tokens interface {
	// Count returns the number of tokens of text (no BOS/EOS).
	Count(text string) int
	// Random returns a text of about n tokens drawn with rng, and its exact token count.
	Random(rng *rand.Rand, n int) (string, int)
	// Name is the tokenizer id saved in the result.
	Name() string
}

// RandomOptions are vLLM's --random-* flags.
type RandomOptions struct {
	InputLen, OutputLen int
	RangeRatio          float64 // lengths are uniform in [len*(1-r), len*(1+r)]
	PrefixLen           int     // a random prefix shared by every prompt, in tokens
}

// LenRange returns the inclusive bounds vLLM samples lengths n +- ratio from.
func LenRange(n int, ratio float64) (lo, hi int) {
	lo = int(math.Floor(float64(n) * (1 - ratio)))
	hi = int(math.Ceil(float64(n) * (1 + ratio)))
	return max(lo, 0), max(hi, lo)
}

// RandomRequests makes n prompts of random tokens: a shared prefix of PrefixLen tokens, then
// InputLen (+- RangeRatio) tokens of their own; OutputLen (+- RangeRatio) tokens asked for.
func RandomRequests(tok Tokens, o RandomOptions, n int, seed uint64) ([]Request, error) {
	if o.InputLen < 0 || o.OutputLen < 1 || o.PrefixLen < 0 || o.RangeRatio < 0 || o.RangeRatio >= 1 {
		return nil, fmt.Errorf("bench: random dataset wants input len >= 0, output len >= 1, prefix len >= 0 and 0 <= range ratio < 1")
	}
	rng := rand.New(rand.NewPCG(seed, 0x72616e646f6d))
	prefix, prefixTokens := "", 0
	if o.PrefixLen > 0 {
		prefix, prefixTokens = tok.Random(rng, o.PrefixLen)
	}
	inLo, inHi := LenRange(o.InputLen, o.RangeRatio)
	outLo, outHi := LenRange(o.OutputLen, o.RangeRatio)
	reqs := make([]Request, n)
	for i := range reqs {
		in := inLo + rng.IntN(inHi-inLo+1)
		out := max(1, outLo+rng.IntN(outHi-outLo+1))
		text, k := tok.Random(rng, in)
		reqs[i] = Request{Prompt: join(prefix, text), PromptTokens: prefixTokens + k, OutputTokens: out}
	}
	return reqs, nil
}

// PrefixRepetitionOptions are vLLM's --prefix-repetition-* flags.
type PrefixRepetitionOptions struct {
	PrefixLen, SuffixLen, NumPrefixes, OutputLen int
}

// PrefixRepetitionRequests makes n prompts that share NumPrefixes random prefixes (n/NumPrefixes
// prompts each, the remainder going to the first ones), each followed by its own random suffix;
// the prompts are shuffled. It exercises prefix caching.
func PrefixRepetitionRequests(tok Tokens, o PrefixRepetitionOptions, n int, seed uint64) ([]Request, error) {
	if o.NumPrefixes < 1 || o.PrefixLen < 0 || o.SuffixLen < 0 || o.OutputLen < 1 {
		return nil, fmt.Errorf("bench: prefix-repetition wants num prefixes >= 1, lengths >= 0, output len >= 1")
	}
	rng := rand.New(rand.NewPCG(seed, 0x707265666978))
	reqs := make([]Request, 0, n)
	for p := range o.NumPrefixes {
		prefix, pk := tok.Random(rng, o.PrefixLen)
		count := n / o.NumPrefixes
		if p < n%o.NumPrefixes {
			count++
		}
		for range count {
			suffix, sk := tok.Random(rng, o.SuffixLen)
			reqs = append(reqs, Request{Prompt: join(prefix, suffix), PromptTokens: pk + sk, OutputTokens: o.OutputLen})
		}
	}
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	return reqs, nil
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// wordlist is the no-tokenizer stand-in: common English words, nearly all one token in the
// GPT-2, Llama and Qwen vocabularies when preceded by a space.
var wordlist = strings.Fields(`the of and to in is that it was for on are as with his they at be this
from have or by one had not but what all were when we there can an your which their said if do
will each about how up out them then she many some so these would other into has more her two
like him see time could no make than first been its who now people my made over did down only way
find use may water long little very after words called just where most know get through back
much go good new write our me man too any day same right look think also around another came come
work three word must because does part even place well such here take why things help put years
different away again off went old number great tell men say small every found still between name
should home big give air line set own under read last never us left end along while might next
sound below saw something thought both few those always looked show large often together asked
house world going want school important until form food keep children feet land side without boy
once animals life enough took sometimes four head above kind began almost live page got earth need
far hand high year mother light parts country father let night following picture being study second
eyes soon times story boys since white days ever paper hard near sentence better best across during
today others however sure means knew try told young miles sun ways thing whole hear example heard
several change answer room sea against top turned learn point city play toward five using himself
usually money seen car`)

// Words is the Tokens used without --tokenizer: random prompts are words from a fixed list,
// counted as one token each, and other text is estimated at one token per 4 bytes (rounded up),
// the usual rule of thumb for English with BPE vocabularies.
type Words struct{}

func (Words) Name() string { return "words" }

func (Words) Count(text string) int { return (len(text) + 3) / 4 }

func (Words) Random(rng *rand.Rand, n int) (string, int) {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(wordlist[rng.IntN(len(wordlist))])
	}
	return sb.String(), n
}
