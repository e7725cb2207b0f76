// Trace files: one request per line of JSON (JSON Lines).
//
//	{"arrival": 0.25, "prompt_tokens": 812, "output_tokens": 128}
//	{"arrival": 0.31, "prompt_tokens": 900, "output_tokens": 64, "prefix_group": 3, "prefix_len": 512}
//	{"arrival": 0.40, "prompt_token_ids": [1, 15043, 29892], "output_tokens": 16, "session": "u42"}
//
// arrival is in seconds from the start; prompt_tokens (or prompt_token_ids, which also give
// the ids prefix caching sees) and output_tokens are required; prefix_group and prefix_len
// say that the first prefix_len tokens are shared by every request of the group. Blank lines
// and lines starting with # are skipped. Requests are sorted by arrival (stable).

package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// traceLine is one line of a trace file.
type traceLine struct {
	Arrival     *float64 `json:"arrival"`
	Prompt      int      `json:"prompt_tokens"`
	IDs         []int    `json:"prompt_token_ids"`
	Output      int      `json:"output_tokens"`
	PrefixGroup *int     `json:"prefix_group"`
	PrefixLen   int      `json:"prefix_len"`
	Session     any      `json:"session"`
}

// maxTraceTokens bounds a line's token counts (a typo must not allocate gigabytes).
const maxTraceTokens = 1 << 24

// ReadTrace reads a trace file.
func ReadTrace(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reqs, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	return reqs, nil
}

// ParseTrace reads trace lines from r; an error names the line.
func ParseTrace(r io.Reader) ([]Request, error) {
	br := bufio.NewReader(r)
	var reqs []Request
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			req, perr := parseTraceLine(t)
			if perr != nil {
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			reqs = append(reqs, req)
		}
		if err != nil {
			break
		}
	}
	if len(reqs) == 0 {
		return nil, errors.New("no requests")
	}
	slices.SortStableFunc(reqs, func(a, b Request) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return reqs, nil
}

func parseTraceLine(b []byte) (Request, error) {
	var l traceLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Request{}, fmt.Errorf("not a trace record: %w", err)
	}
	if dec.More() {
		return Request{}, errors.New("more than one JSON value on the line")
	}
	switch {
	case l.Arrival == nil:
		return Request{}, errors.New("no arrival")
	case math.IsNaN(*l.Arrival) || math.IsInf(*l.Arrival, 0) || *l.Arrival < 0 || *l.Arrival > 1e9:
		return Request{}, fmt.Errorf("arrival %v: want seconds >= 0", *l.Arrival)
	case l.Prompt == 0 && len(l.IDs) == 0:
		return Request{}, errors.New("no prompt_tokens or prompt_token_ids")
	case l.Prompt != 0 && len(l.IDs) != 0 && l.Prompt != len(l.IDs):
		return Request{}, fmt.Errorf("prompt_tokens %d but %d prompt_token_ids", l.Prompt, len(l.IDs))
	case l.Prompt < 0 || l.Prompt > maxTraceTokens:
		return Request{}, fmt.Errorf("prompt_tokens %d: want 1..%d", l.Prompt, maxTraceTokens)
	case l.Output < 1 || l.Output > maxTraceTokens:
		return Request{}, fmt.Errorf("output_tokens %d: want 1..%d", l.Output, maxTraceTokens)
	case l.PrefixLen < 0:
		return Request{}, fmt.Errorf("prefix_len %d < 0", l.PrefixLen)
	case l.PrefixLen > 0 && l.PrefixGroup == nil:
		return Request{}, errors.New("prefix_len without prefix_group")
	case l.PrefixGroup != nil && (*l.PrefixGroup < 0 || *l.PrefixGroup >= 1<<20):
		return Request{}, fmt.Errorf("prefix_group %d: want 0..%d", *l.PrefixGroup, 1<<20-1)
	case l.PrefixGroup != nil && len(l.IDs) > 0:
		return Request{}, errors.New("prefix_group with prompt_token_ids: the ids already say what is shared")
	}
	prompt := max(l.Prompt, len(l.IDs))
	if l.PrefixLen > prompt {
		return Request{}, fmt.Errorf("prefix_len %d exceeds the prompt's %d tokens", l.PrefixLen, prompt)
	}
	r := Request{At: int64(*l.Arrival * 1e9), PromptLen: int32(prompt), Output: int32(l.Output), Group: -1,
		Session: sessionOf(l.Session), IDs: l.IDs}
	if l.PrefixGroup != nil {
		r.Group, r.PrefixLen = int32(*l.PrefixGroup), int32(l.PrefixLen)
	}
	return r, nil
}
