// This file implements the public rendering entry points: Template.Render and Apply, the
// equivalent of transformers' apply_chat_template.
package chattmpl

import (
	"errors"
	"time"
)

// Render renders the template with vars (Go values: nil, bool, ints, floats, string, []any,
// map[string]any, *Map, or values from DecodeJSON). A raise_exception(msg) call returns a
// *RaiseError carrying msg; strftime_now uses the wall clock (see RenderAt).
func (t *Template) Render(vars map[string]any) (string, error) {
	return t.RenderAt(vars, time.Now)
}

// RenderAt is Render with an injectable clock for strftime_now.
func (t *Template) RenderAt(vars map[string]any, now func() time.Time) (out string, err error) {
	if now == nil {
		now = time.Now
	}
	root := newEnv(nil)
	for k, v := range globals(now) {
		root.vars[k] = v
	}
	e := newEnv(root)
	for k, v := range vars {
		c, err := toRuntime(v)
		if err != nil {
			return "", err
		}
		e.vars[k] = c
	}
	in := &interp{src: t.src, now: now}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &Error{Msg: sprintf("internal error while rendering: %v", r)}
		}
	}()
	out, err = in.block(t.body, e)
	if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
		return "", &Error{Msg: err.Error()}
	}
	return out, err
}

// Options configures Apply.
type Options struct {
	AddGenerationPrompt bool
	Tools               []any // nil: `tools` is left undefined, as transformers.js does
	BOSToken, EOSToken  string
	Extra               map[string]any // further variables, e.g. enable_thinking
	Now                 func() time.Time
}

// Apply parses src and renders it over messages the way transformers.js apply_chat_template
// does: messages, add_generation_prompt, tools (when non-nil), bos_token/eos_token (when
// non-empty), then Extra.
func Apply(src string, messages []any, opts Options) (string, error) {
	t, err := Parse(src)
	if err != nil {
		return "", err
	}
	vars := map[string]any{
		"messages":              messages,
		"add_generation_prompt": opts.AddGenerationPrompt,
	}
	if opts.Tools != nil {
		vars["tools"] = opts.Tools
	}
	if opts.BOSToken != "" {
		vars["bos_token"] = opts.BOSToken
	}
	if opts.EOSToken != "" {
		vars["eos_token"] = opts.EOSToken
	}
	for k, v := range opts.Extra {
		vars[k] = v
	}
	return t.RenderAt(vars, opts.Now)
}
