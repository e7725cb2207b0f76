// This file renders a conversation with a chat template and tokenizes it with its loss mask.
package sft

import (
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/chattmpl"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Renderer turns conversations into token ids and a loss mask.
type Renderer struct {
	Template string // Jinja chat template; "" = chattmpl.PlainTranscript (what the server uses then)
	Tok      *tokenizer.Tokenizer
}

// render applies the template to msgs with the vocabulary's BOS/EOS texts.
func (r *Renderer) render(msgs []Message, gen bool) (string, error) {
	tmpl := r.Template
	if tmpl == "" {
		tmpl = chattmpl.PlainTranscript
	}
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	opts := chattmpl.Options{AddGenerationPrompt: gen}
	v := r.Tok.Vocab()
	if v.BOS >= 0 && v.BOS < len(v.Tokens) {
		opts.BOSToken = v.Tokens[v.BOS]
	}
	if v.EOS >= 0 && v.EOS < len(v.Tokens) {
		opts.EOSToken = v.Tokens[v.EOS]
	}
	return chattmpl.Apply(tmpl, list, opts)
}

// Prompt is the text the server would give the model for msgs, ending in the generation
// prompt, and its ids (tokenized as the server tokenizes a chat prompt).
func (r *Renderer) Prompt(msgs []Message) (string, []int, error) {
	s, err := r.render(msgs, true)
	if err != nil {
		return "", nil, err
	}
	return s, r.Tok.Encode(s, false, true), nil
}

// Encode renders msgs (trailing turns after the last assistant turn are dropped) and returns
// its ids and mask: mask[i] is true for the tokens of the assistant's turns — for assistant
// turn i, the text the template adds between render(msgs[:i], generation prompt) and
// render(msgs[:i+1]), its content and end-of-turn marks — and for the end-of-sequence token
// appended after the last assistant turn when that turn holds no end-of-generation token (the
// plain transcript's case), so the model learns to stop. Each piece is tokenized on its own:
// the prompt pieces exactly as the server tokenizes a prompt.
func (r *Renderer) Encode(msgs []Message) (ids []int32, mask []bool, err error) {
	last := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			last = i
		}
	}
	if last < 0 {
		return nil, nil, fmt.Errorf("no assistant turn")
	}
	add := func(s string, m bool) []int {
		t := r.Tok.Encode(s, false, true)
		for _, id := range t {
			ids = append(ids, int32(id))
			mask = append(mask, m)
		}
		return t
	}
	done := ""
	var lastPiece []int
	for i := 0; i <= last; i++ {
		if msgs[i].Role != "assistant" {
			continue
		}
		p, err := r.render(msgs[:i], true)
		if err != nil {
			return nil, nil, fmt.Errorf("chat template: %w", err)
		}
		f, err := r.render(msgs[:i+1], false)
		if err != nil {
			return nil, nil, fmt.Errorf("chat template: %w", err)
		}
		if !strings.HasPrefix(p, done) || !strings.HasPrefix(f, p) {
			return nil, nil, fmt.Errorf("chat template: the rendering of turn %d does not extend the earlier turns' (cannot place the loss mask)", i)
		}
		add(p[len(done):], false)
		lastPiece = add(f[len(p):], true)
		done = f
	}
	eog := false
	for _, id := range lastPiece {
		eog = eog || r.Tok.IsEOG(id)
	}
	if eos := r.Tok.EOS(); !eog && eos >= 0 {
		ids = append(ids, int32(eos))
		mask = append(mask, true)
	}
	return ids, mask, nil
}
