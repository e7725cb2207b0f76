// `serve --speculative-config`: the default model drafting for itself serves the same greedy
// completion as without speculation, and /metrics counts the drafts (vLLM's spec_decode
// counters).
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

func TestServeSpeculative(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	draft, err := defaultModel(textLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0, "ignore_eos": true}`
	texts := map[bool]string{}
	for _, on := range []bool{false, true} {
		args := []string{"--threads", "2", "--batch-invariant"}
		if on {
			args = append(args, "--speculative-config", `{"method": "draft_model", "model": "`+draft+`", "num_speculative_tokens": 3}`)
		}
		url, _, stop := startServe(t, args...)
		code, resp := post(t, url+"/v1/completions", body)
		if code != 200 {
			t.Fatalf("speculation %v: %d %s", on, code, resp)
		}
		var r struct {
			Choices []struct{ Text string }
		}
		if err := json.Unmarshal([]byte(resp), &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("speculation %v: %v %s", on, err, resp)
		}
		texts[on] = r.Choices[0].Text
		if on {
			m, err := http.Get(url + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(m.Body)
			m.Body.Close()
			match := regexp.MustCompile(`(?m)^vllm:spec_decode_num_accepted_tokens_total\{[^}]*\} (\S+)`).FindSubmatch(b)
			if match == nil {
				t.Fatalf("no spec_decode counters in /metrics:\n%s", b)
			}
			if n, _ := strconv.ParseFloat(string(match[1]), 64); n < 1 {
				t.Errorf("a model drafting for itself had %s drafts accepted", match[1])
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	if texts[true] != texts[false] || texts[true] == "" {
		t.Fatalf("greedy text with speculation %q, without %q", texts[true], texts[false])
	}
}
