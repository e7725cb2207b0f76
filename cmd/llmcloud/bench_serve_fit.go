// `bench serve` against the server's context length: GET /v1/models gives the model names and,
// from vLLM and llmcloud, max_model_len. A dataset none of whose requests fit is refused before
// the run with the flags to change; the random dataset's default lengths shrink to fit (said in
// one line). A server that does not report max_model_len (llama-server, ...) is not checked.

package main

import (
	"encoding/json"
	"flag"
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
	given := false
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	}
	return given
}

// randomLens returns the random dataset's input and output lengths: the flags, or, when the
// user gave neither length and the defaults do not fit maxLen (> 0), lengths that do, keeping a
// quarter of the room for prompts counted differently by the server's tokenizer.
func (f *serveFlags) randomLens(maxLen int, stderr io.Writer) (in, out int) {
	in, out = f.randIn, f.randOut
	if f.dataset != "random" || maxLen <= 0 || f.flagSet("random-input-len") || f.flagSet("random-output-len") {
		return in, out
	}
	r := f.randRange
	_, inHi := bench.LenRange(in, r)
	_, outHi := bench.LenRange(out, r)
	if f.randPrefix+inHi+outHi <= maxLen {
		return in, out
	}
	in, out = f.fitRandom(maxLen)
	fmt.Fprintf(stderr, "the server's max_model_len is %d tokens: random prompts of %d input + %d output tokens instead of the default %d + %d (--random-input-len and --random-output-len choose)\n",
		maxLen, in, out, f.randIn, f.randOut)
	return in, out
}

// fitRandom returns random lengths whose largest requests fit maxLen: output at most a quarter
// of it, input three quarters of the rest (the server's tokenizer may count the prompt's words
// as more tokens than the dataset does).
func (f *serveFlags) fitRandom(maxLen int) (in, out int) {
	r := f.randRange
	out = max(1, min(f.randOut, int(float64(maxLen)/4/(1+r))))
	_, outHi := bench.LenRange(out, r)
	in = max(1, int(float64(maxLen-f.randPrefix-outHi)*3/4/(1+r)))
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
		in, out := f.fitRandom(maxLen)
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
