// Decoding of the request fields that take several JSON shapes.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Prompts decodes a completions prompt: a string, a list of strings, a list of token ids or a
// list of token-id lists. Exactly one of texts and ids is non-nil.
func Prompts(raw json.RawMessage) (texts []string, ids [][]int, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil, errors.New("prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) == 0 {
			return nil, nil, errors.New("prompt is an empty list")
		}
		return ss, nil, nil
	}
	var one []int
	if json.Unmarshal(raw, &one) == nil {
		if len(one) == 0 {
			return nil, nil, errors.New("prompt is an empty list")
		}
		return nil, [][]int{one}, nil
	}
	var many [][]int
	if json.Unmarshal(raw, &many) == nil {
		if len(many) == 0 {
			return nil, nil, errors.New("prompt is an empty list")
		}
		return nil, many, nil
	}
	return nil, nil, errors.New("prompt must be a string, a list of strings, a list of token ids or a list of token-id lists")
}

// Stops decodes stop: absent, a string or a list of strings.
func Stops(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		return nil, errors.New("stop must be a string or a list of strings")
	}
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}
