// This file implements TokenizerConfig: special tokens, added tokens and the chat template
// of tokenizer_config.json.
package hfdir

import (
	"fmt"
	"strconv"
)

// TokenizerConfig holds the fields of tokenizer_config.json that llmcloud uses; Raw holds
// everything.
type TokenizerConfig struct {
	// ChatTemplate is chat_template when it is a string, or the "default" entry when it is a
	// list of {name, template}; ChatTemplates holds every named template of such a list.
	ChatTemplate  string
	ChatTemplates map[string]string

	// Special tokens: a string, or the content of an {"content": ...} object; "" when null.
	BOSToken, EOSToken, PADToken, UNKToken string

	AddBOSToken, AddEOSToken *bool
	AddedTokens              map[int]AddedToken // added_tokens_decoder, by token id
	ModelMaxLength           float64            // model_max_length; 0 when absent (often 1e30: no limit)
	Raw                      map[string]any
}

// AddedToken is one entry of added_tokens_decoder.
type AddedToken struct {
	Content                                         string
	Special, LStrip, RStrip, Normalized, SingleWord bool
}

// ReadTokenizerConfig reads and validates one tokenizer_config.json.
func ReadTokenizerConfig(path string) (*TokenizerConfig, error) {
	m, err := readObject(path)
	if err != nil {
		return nil, err
	}
	return tokenizerConfigFrom(m, path)
}

func tokenizerConfigFrom(m map[string]any, file string) (*TokenizerConfig, error) {
	o := &obj{file: file, m: m}
	tc := &TokenizerConfig{Raw: m}
	tc.ChatTemplate, tc.ChatTemplates = chatTemplate(o)
	tc.BOSToken = specialToken(o, "bos_token")
	tc.EOSToken = specialToken(o, "eos_token")
	tc.PADToken = specialToken(o, "pad_token")
	tc.UNKToken = specialToken(o, "unk_token")
	tc.AddBOSToken = o.boolPtr("add_bos_token")
	tc.AddEOSToken = o.boolPtr("add_eos_token")
	tc.ModelMaxLength, _ = o.float("model_max_length")
	if d := o.object("added_tokens_decoder"); d != nil {
		tc.AddedTokens = make(map[int]AddedToken, len(d.m))
		for _, k := range sortedKeys(d.m) {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 {
				d.failf(k, "key is not a token id")
				break
			}
			e := d.object(k)
			if e == nil {
				d.failf(k, "want an object, got null")
				break
			}
			content, ok := e.str("content")
			if !ok && e.err == nil {
				e.failf("content", "required field is missing")
			}
			at := AddedToken{Content: content}
			at.Special, _ = e.boolean("special")
			at.LStrip, _ = e.boolean("lstrip")
			at.RStrip, _ = e.boolean("rstrip")
			at.Normalized, _ = e.boolean("normalized")
			at.SingleWord, _ = e.boolean("single_word")
			d.adopt(e)
			if d.err != nil {
				break
			}
			tc.AddedTokens[id] = at
		}
		o.adopt(d)
	}
	if o.err != nil {
		return nil, o.err
	}
	if tc.ModelMaxLength < 0 {
		return nil, fmt.Errorf("hfdir: %s: field \"model_max_length\": must not be negative, got %g", file, tc.ModelMaxLength)
	}
	return tc, nil
}

// chatTemplate reads chat_template: a string, or a list of {"name", "template"} objects.
func chatTemplate(o *obj) (string, map[string]string) {
	v, ok := o.get("chat_template")
	if !ok {
		return "", nil
	}
	switch t := v.(type) {
	case string:
		return t, nil
	case []any:
		named := make(map[string]string, len(t))
		for i, e := range t {
			m, isObj := e.(map[string]any)
			name, ok1 := m["name"].(string)
			tmpl, ok2 := m["template"].(string)
			if !isObj || !ok1 || !ok2 {
				o.failf("chat_template", "element %d: want {\"name\": string, \"template\": string}", i)
				return "", nil
			}
			named[name] = tmpl
		}
		return named["default"], named
	}
	o.failf("chat_template", "want a string or a list of named templates, got %s", typeName(v))
	return "", nil
}

// specialToken reads a special token written as a string or as an AddedToken object.
func specialToken(o *obj, key string) string {
	v, ok := o.get(key)
	if !ok {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		s, isStr := t["content"].(string)
		if !isStr {
			o.failf(key, "object without a string \"content\"")
		}
		return s
	}
	o.failf(key, "want a string or an object with \"content\", got %s", typeName(v))
	return ""
}
