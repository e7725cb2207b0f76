// Datasets read from files: ShareGPT conversations and plain prompt files.

package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// ShareGPTRequests reads a ShareGPT JSON file (a list of {"conversations": [{"from": "human",
// "value": ...}, {"from": "gpt", "value": ...}, ...]}), shuffles the conversations with seed and
// takes the first turn as prompt, the second's token count as output length (or outputLen when
// > 0). As vLLM does, pairs with a prompt or reply under 4 tokens, a prompt over 1024 tokens or
// prompt+reply over 2048 are skipped (unless outputLen is fixed, then only the prompt rules).
func ShareGPTRequests(tok Tokens, path string, n, outputLen int, seed uint64) ([]Request, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: sharegpt: %w", err)
	}
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(b, &convs); err != nil {
		return nil, fmt.Errorf("bench: sharegpt %s: %w", path, err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x73686172656770))
	rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	var reqs []Request
	for _, c := range convs {
		if len(reqs) == n {
			break
		}
		if len(c.Conversations) < 2 {
			continue
		}
		prompt, reply := c.Conversations[0].Value, c.Conversations[1].Value
		pl := tok.Count(prompt)
		ol := outputLen
		if ol <= 0 {
			ol = tok.Count(reply)
			if ol < 4 || pl+ol > 2048 {
				continue
			}
		}
		if pl < 4 || pl > 1024 {
			continue
		}
		reqs = append(reqs, Request{Prompt: prompt, PromptTokens: pl, OutputTokens: ol})
	}
	if len(reqs) < n {
		return nil, fmt.Errorf("bench: sharegpt %s: only %d usable conversations, %d prompts asked", path, len(reqs), n)
	}
	return reqs, nil
}

// FileRequests reads prompts from a file: JSON Lines with a "prompt" field (and optionally
// "output_tokens" or "max_tokens") when the file ends in .jsonl, else one prompt per non-empty
// line. Prompts are used in order, cycling when n exceeds the file; outputLen applies where a
// line gives none.
func FileRequests(tok Tokens, path string, n, outputLen int) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: prompts file: %w", err)
	}
	defer f.Close()
	var all []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	jsonl := strings.HasSuffix(path, ".jsonl")
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		r := Request{Prompt: s, OutputTokens: outputLen}
		if jsonl {
			var l struct {
				Prompt       string `json:"prompt"`
				OutputTokens int    `json:"output_tokens"`
				MaxTokens    int    `json:"max_tokens"`
			}
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				return nil, fmt.Errorf("bench: %s:%d: %w", path, line, err)
			}
			r.Prompt = l.Prompt
			if l.OutputTokens > 0 {
				r.OutputTokens = l.OutputTokens
			} else if l.MaxTokens > 0 {
				r.OutputTokens = l.MaxTokens
			}
		}
		r.PromptTokens = tok.Count(r.Prompt)
		all = append(all, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("bench: %s has no prompts", path)
	}
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = all[i%len(all)]
	}
	return reqs, nil
}
