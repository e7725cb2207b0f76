// `bench serve` against the server's context length: GET /v1/models gives the model names and,
// from vLLM and llmcloud, max_model_len. A dataset none of whose requests fit is refused before
// the run with the flags to change; the random dataset's default lengths shrink to fit (said in
// one line). A server that does not report max_model_len (llama-server, ...) is not checked.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/llmcloud/llmcloud/bench"
)

// serverModels is what GET /v1/models said.
type serverModels struct {
	ids    []string
	maxLen map[string]int // max_model_len by model id, where reported
	err    error          // the request failed or listed no model
}

// askModels queries base's /v1/models.
func askModels(base string, timeout time.Duration) serverModels {
	c := &http.Client{Timeout: min(timeout, 30*time.Second)}
	if timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	resp, err := c.Get(base + "/v1/models")
	if err != nil {
		return serverModels{err: err}
	}
	defer resp.Body.Close()
	var l struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || len(l.Data) == 0 {
		return serverModels{err: fmt.Errorf("GET %s/v1/models gave no model (status %d)", base, resp.StatusCode)}
	}
	m := serverModels{maxLen: map[string]int{}}
	for _, d := range l.Data {
		m.ids = append(m.ids, d.ID)
		if d.MaxModelLen > 0 {
			m.maxLen[d.ID] = d.MaxModelLen
		}
	}
	return m
}

// contextOf is the max_model_len the server reported for model ("": the first), 0 if none.
func (m serverModels) contextOf(model string) int {
	if model == "" && len(m.ids) > 0 {
		model = m.ids[0]
	}
	return m.maxLen[model]
}

// flagSet reports whether the user gave flag name.
func (f *serveFlags) flagSet(name string) bool {
	return f.fs != nil && flagGiven(f.fs, name)
}

// randomLens returns the random dataset's input and output lengths: the flags, or, when the
// user gave neither length and the defaults do not fit maxLen (> 0), lengths that do (said in
// one line).
func (f *serveFlags) randomLens(maxLen int, stderr io.Writer) (in, out int) {
	if f.dataset != "random" || f.flagSet("random-input-len") || f.flagSet("random-output-len") {
		return f.randIn, f.randOut
	}
	return fitRandomDefaults(f.randIn, f.randOut, f.randPrefix, f.randRange, maxLen, "the server's", stderr)
}

// fitRandomDefaults returns the random dataset's default lengths in, out, or, when its largest
// requests do not fit maxLen (> 0), lengths that do, saying so on stderr (whose: "the server's"
// or "the profile's" max_model_len).
func fitRandomDefaults(in, out, prefix int, r float64, maxLen int, whose string, stderr io.Writer) (int, int) {
	_, inHi := bench.LenRange(in, r)
	_, outHi := bench.LenRange(out, r)
	if maxLen <= 0 || prefix+inHi+outHi <= maxLen {
		return in, out
	}
	fin, fout := fitRandom(out, prefix, r, maxLen)
	fmt.Fprintf(stderr, "%s max_model_len is %d tokens: random prompts of %d input + %d output tokens instead of the default %d + %d (--random-input-len and --random-output-len choose)\n",
		whose, maxLen, fin, fout, in, out)
	return fin, fout
}

// fitRandom returns random lengths whose largest requests fit maxLen: output at most a quarter
// of it, input three quarters of the rest (the server's tokenizer may count the prompt's words
// as more tokens than the dataset does).
func fitRandom(wantOut, prefix int, r float64, maxLen int) (in, out int) {
	out = max(1, min(wantOut, int(float64(maxLen)/4/(1+r))))
	_, outHi := bench.LenRange(out, r)
	in = max(1, int(float64(maxLen-prefix-outHi)*3/4/(1+r)))
	return in, out
}

// checkFit refuses reqs when none fits in maxLen (> 0) prompt + output tokens, and warns when
// some do not.
func (f *serveFlags) checkFit(reqs []bench.Request, maxLen int, stderr io.Writer) error {
	if maxLen <= 0 || len(reqs) == 0 {
		return nil
	}
	over, worst := 0, reqs[0]
	for _, r := range reqs {
		if r.PromptTokens+r.OutputTokens > maxLen {
			over++
			if r.PromptTokens+r.OutputTokens > worst.PromptTokens+worst.OutputTokens {
				worst = r
			}
		}
	}
	if over == 0 {
		return nil
	}
	if over < len(reqs) {
		fmt.Fprintf(stderr, "warning: %d of %d requests ask for more than the server's max_model_len of %d tokens (the largest: %d prompt + %d output tokens) and will fail\n",
			over, len(reqs), maxLen, worst.PromptTokens, worst.OutputTokens)
		return nil
	}
	var fix string
	switch f.dataset {
	case "random":
		in, out := fitRandom(f.randOut, f.randPrefix, f.randRange, maxLen)
		fix = fmt.Sprintf("give smaller --random-input-len and --random-output-len (e.g. %d and %d)", in, out)
	case "prefix-repetition":
		fix = "lower --prefix-repetition-prefix-len, --prefix-repetition-suffix-len and --prefix-repetition-output-len"
	case "sharegpt":
		fix = "set a smaller --sharegpt-output-len"
	default:
		fix = "use shorter prompts or a smaller --custom-output-len"
	}
	s := smallest(reqs)
	return usagef("every request asks for more than the server's max_model_len of %d tokens (the smallest: %d prompt + %d output tokens), so all would fail; %s, or serve with a larger --max-model-len",
		maxLen, s.PromptTokens, s.OutputTokens, fix)
}

// smallest is the request of reqs with the fewest prompt + output tokens.
func smallest(reqs []bench.Request) bench.Request {
	s := reqs[0]
	for _, r := range reqs[1:] {
		if r.PromptTokens+r.OutputTokens < s.PromptTokens+s.OutputTokens {
			s = r
		}
	}
	return s
}
