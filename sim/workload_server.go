// Prompts as the server sees them: with the model's tokenizer, a simulation makes the very
// prompts `bench serve --tokenizer MODEL` sends (bench's own generators, the same seed) and
// tokenizes each as the server's /v1/completions does (special tokens added: the BOS), so the
// simulated replicas run the token ids the real ones run: the same lengths, the same shared
// prefixes for prefix caching. bench's own count (its tokenizer, no BOS, the text before JSON)
// is not what the server runs: on the built-in model bench's 448-token random prompts are 459
// to 497 tokens in the server (mean 477), as the server's 400s for the longest showed.

package sim

import (
	"encoding/json"
	"fmt"

	"github.com/llmcloud/llmcloud/bench"
)

// serverRequests returns d's first n requests as bench makes them, with the token ids the
// server runs, or ok false when d has no tokenizer that can say what the server runs.
func serverRequests(d Dataset, n int, seed uint64) (reqs []Request, ok bool, err error) {
	h, isHF := d.Tokenizer.(*bench.HFTokens)
	if !isHF || h == nil {
		return nil, false, nil
	}
	var brs []bench.Request
	switch d.Name {
	case "random":
		brs, err = bench.RandomRequests(h, bench.RandomOptions{InputLen: d.RandomInputLen, OutputLen: d.RandomOutputLen,
			RangeRatio: d.RandomRangeRatio, PrefixLen: d.RandomPrefix}, n, seed)
	case "prefix-repetition":
		brs, err = bench.PrefixRepetitionRequests(h, bench.PrefixRepetitionOptions{PrefixLen: d.PrefixLen, SuffixLen: d.SuffixLen,
			NumPrefixes: d.NumPrefixes, OutputLen: d.PrefixOut}, n, seed)
	case "sharegpt":
		brs, err = bench.ShareGPTRequests(h, d.Path, n, d.ShareGPTOut, seed)
	case "file", "custom":
		brs, err = bench.FileRequests(h, d.Path, n, d.CustomOut)
	default:
		return nil, false, fmt.Errorf("sim: unknown --dataset-name %q (random, prefix-repetition, sharegpt, file)", d.Name)
	}
	if err != nil {
		return nil, false, err
	}
	if len(brs) < n {
		return nil, false, fmt.Errorf("sim: the dataset has %d requests, want %d", len(brs), n)
	}
	reqs = make([]Request, n)
	for i, b := range brs[:n] {
		prompt, err := overJSON(b.Prompt)
		if err != nil {
			return nil, false, err
		}
		ids := h.Tok.Encode(prompt, true, true) // as server/completions.go: add_special_tokens defaults to true
		reqs[i] = Request{PromptLen: int32(len(ids)), Output: int32(max(b.OutputTokens, 1)), Group: -1, IDs: ids}
	}
	return reqs, true, nil
}

// overJSON is the prompt as the server reads it from bench's JSON body: a random text of
// decoded byte tokens can be invalid UTF-8, and JSON carries each invalid byte as U+FFFD
// (three bytes, so up to three byte tokens where bench counted one).
func overJSON(s string) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	var out string
	err = json.Unmarshal(b, &out)
	return out, err
}
