package router

import (
	"encoding/json"
	"testing"
)

// TestPrefillBody: the prefill copy asks one token, unstreamed, one choice, and keeps every
// field the prompt depends on; a body that is not a JSON object is not split.
func TestPrefillBody(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},` +
		`"max_completion_tokens":50,"n":3,"min_tokens":4,"cache_salt":"s","temperature":0}`
	out, ok := prefillBody([]byte(in))
	if !ok {
		t.Fatal("not split")
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"max_tokens": 1.0, "stream": false, "n": 1.0, "model": "m", "cache_salt": "s", "temperature": 0.0}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	for _, k := range []string{"stream_options", "max_completion_tokens", "min_tokens"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s kept", k)
		}
	}
	if _, ok := m["messages"]; !ok {
		t.Error("messages dropped")
	}
	for _, bad := range []string{``, `[1]`, `null`, `{"prompt":`} {
		if _, ok := prefillBody([]byte(bad)); ok {
			t.Errorf("%q split", bad)
		}
	}
}
