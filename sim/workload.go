// Workloads: the requests a simulation serves, in a compact form (a million of them must fit
// in memory): arrival time, prompt length, the prompt's shared prefix (group and length, so
// prefix caching sees equal leading tokens), output length. Prompt token ids are made when a
// request reaches its replica (Request.Tokens).

package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/bench"
)

// Request is one simulated request.
type Request struct {
	At        int64  // arrival, ns from the start
	PromptLen int32  // prompt tokens
	Output    int32  // output tokens: the request finishes after this many (ignore_eos)
	Group     int32  // shared-prefix group (-1: none); prompts of a group share PrefixLen leading tokens
	PrefixLen int32  // leading tokens shared with the group
	Session   string // X-Session-ID for the session policy ("" none)
	IDs       []int  // explicit prompt token ids (a trace's prompt_token_ids), else nil
}

// Tokens writes r's prompt token ids (request index i) into buf and returns it: the group's
// prefix ids, then ids of r's own. Ids are arbitrary (the scheduler only hashes them), drawn
// from disjoint ranges so that distinct prompts never share a block by chance.
func (r *Request) Tokens(i int, buf []int) []int {
	if r.IDs != nil {
		return r.IDs
	}
	buf = buf[:0]
	for k := range int(r.PrefixLen) {
		buf = append(buf, 1<<40|int(r.Group)<<20|k)
	}
	for k := int(r.PrefixLen); k < int(r.PromptLen); k++ {
		buf = append(buf, 1<<50|i<<20|k)
	}
	return buf
}

// Text renders r's prompt as text for routing policies that read it (prefix): four bytes per
// token, so equal token prefixes are equal text prefixes. Only the first maxTokens are
// rendered (the prefix policy hashes 16 KiB at most).
func (r *Request) Text(i int, maxTokens int) string {
	var sb strings.Builder
	n := min(int(r.PromptLen), maxTokens)
	if r.IDs != nil {
		n = min(len(r.IDs), maxTokens)
	}
	sb.Grow(4 * n)
	for k := 0; k < n; k++ {
		var id int
		switch {
		case r.IDs != nil:
			id = r.IDs[k]
		case k < int(r.PrefixLen):
			id = 1<<40 | int(r.Group)<<20 | k
		default:
			id = 1<<50 | i<<20 | k
		}
		h := uint32(mix(uint64(id)))
		sb.WriteByte(byte('a' + h%26))
		sb.WriteByte(byte('a' + h/26%26))
		sb.WriteByte(byte('a' + h/676%26))
		sb.WriteByte(' ')
	}
	return sb.String()
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Dataset are `bench serve`'s dataset flags (same names and defaults).
type Dataset struct {
	Name                                          string // random, prefix-repetition, sharegpt, file (custom)
	Path                                          string
	RandomInputLen, RandomOutputLen, RandomPrefix int
	RandomRangeRatio                              float64
	PrefixLen, SuffixLen, NumPrefixes, PrefixOut  int
	ShareGPTOut, CustomOut                        int
	Tokenizer                                     bench.Tokens // sharegpt and file: counts prompt tokens
}

// Params are the dataset's flags as `bench serve` saves them in its result.
func (d Dataset) Params() map[string]any {
	switch d.Name {
	case "random":
		return map[string]any{"random_input_len": d.RandomInputLen, "random_output_len": d.RandomOutputLen,
			"random_range_ratio": d.RandomRangeRatio, "random_prefix_len": d.RandomPrefix}
	case "prefix-repetition":
		return map[string]any{"prefix_repetition_prefix_len": d.PrefixLen, "prefix_repetition_suffix_len": d.SuffixLen,
			"prefix_repetition_num_prefixes": d.NumPrefixes, "prefix_repetition_output_len": d.PrefixOut}
	case "sharegpt":
		return map[string]any{"dataset_path": d.Path, "sharegpt_output_len": d.ShareGPTOut}
	}
	return map[string]any{"dataset_path": d.Path, "custom_output_len": d.CustomOut}
}

// Requests makes n requests of dataset d arriving at rate (requests/s; +Inf: all at once)
// with the given burstiness. Arrivals are bench.Gaps drawn exactly as `bench serve` draws them
// for the same seed. random and prefix-repetition draw their lengths from the same
// distributions as bench's generators (bench.LenRange, the same prefix structure) in compact
// form, not the same draws; sharegpt and file read the file with bench's own readers. With the
// model's tokenizer (d.Tokenizer from bench.LoadTokenizer) every dataset is bench's very
// prompts, tokenized as the server does (serverRequests).
func Requests(d Dataset, n int, rate float64, burstiness float64, seed uint64) ([]Request, error) {
	if n < 1 {
		return nil, fmt.Errorf("sim: want at least one request")
	}
	if reqs, ok, err := serverRequests(d, n, seed); err != nil {
		return nil, err
	} else if ok {
		SetArrivals(reqs, rate, burstiness, seed)
		return reqs, nil
	}
	reqs := make([]Request, n)
	switch d.Name {
	case "random":
		if d.RandomInputLen < 0 || d.RandomOutputLen < 1 || d.RandomPrefix < 0 || d.RandomRangeRatio < 0 || d.RandomRangeRatio >= 1 {
			return nil, fmt.Errorf("sim: random dataset wants input len >= 0, output len >= 1, prefix len >= 0 and 0 <= range ratio < 1")
		}
		rng := rand.New(rand.NewPCG(seed, 0x72616e646f6d))
		inLo, inHi := bench.LenRange(d.RandomInputLen, d.RandomRangeRatio)
		outLo, outHi := bench.LenRange(d.RandomOutputLen, d.RandomRangeRatio)
		for i := range reqs {
			in := inLo + rng.IntN(inHi-inLo+1)
			out := max(1, outLo+rng.IntN(outHi-outLo+1))
			reqs[i] = Request{PromptLen: int32(d.RandomPrefix + in), Output: int32(out), Group: -1}
			if d.RandomPrefix > 0 {
				reqs[i].Group, reqs[i].PrefixLen = 0, int32(d.RandomPrefix)
			}
		}
	case "prefix-repetition":
		if d.NumPrefixes < 1 || d.PrefixLen < 0 || d.SuffixLen < 0 || d.PrefixOut < 1 {
			return nil, fmt.Errorf("sim: prefix-repetition wants num prefixes >= 1, lengths >= 0, output len >= 1")
		}
		rng := rand.New(rand.NewPCG(seed, 0x707265666978))
		i := 0
		for p := range d.NumPrefixes {
			count := n / d.NumPrefixes
			if p < n%d.NumPrefixes {
				count++
			}
			for range count {
				reqs[i] = Request{PromptLen: int32(d.PrefixLen + d.SuffixLen), Output: int32(d.PrefixOut), Group: int32(p), PrefixLen: int32(d.PrefixLen)}
				i++
			}
		}
		rng.Shuffle(n, func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	case "sharegpt", "file", "custom":
		if d.Path == "" {
			return nil, fmt.Errorf("sim: --dataset-name %s needs --dataset-path", d.Name)
		}
		tok := d.Tokenizer
		if tok == nil {
			tok = bench.Words{}
		}
		var brs []bench.Request
		var err error
		if d.Name == "sharegpt" {
			brs, err = bench.ShareGPTRequests(tok, d.Path, n, d.ShareGPTOut, seed)
		} else {
			brs, err = bench.FileRequests(tok, d.Path, n, d.CustomOut)
		}
		if err != nil {
			return nil, err
		}
		for i, b := range brs[:n] {
			reqs[i] = Request{PromptLen: int32(max(b.PromptTokens, 1)), Output: int32(max(b.OutputTokens, 1)), Group: -1}
		}
	default:
		return nil, fmt.Errorf("sim: unknown --dataset-name %q (random, prefix-repetition, sharegpt, file)", d.Name)
	}
	SetArrivals(reqs, rate, burstiness, seed)
	return reqs, nil
}

// SetArrivals gives reqs the arrival times `bench serve` sends them at: request i at the sum
// of the first i gaps of bench.Gaps with bench.Run's seed.
func SetArrivals(reqs []Request, rate, burstiness float64, seed uint64) {
	if burstiness <= 0 {
		burstiness = 1
	}
	rng := rand.New(rand.NewPCG(seed, 0x6172726976616c))
	gaps := bench.Gaps(len(reqs), rate, burstiness, rng)
	var t time.Duration
	for i := range reqs {
		if i > 0 {
			t += gaps[i-1]
		}
		reqs[i].At = int64(t)
	}
}

// sessionOf is a trace's session field as a string (numbers allowed).
func sessionOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}
