// maxtokens_test.go checks that a prompt that fits but leaves too little room for the
// requested output is blamed on the max-tokens field of each endpoint, not on the prompt.
package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
)

func TestMaxTokensOverLimitParam(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}}, nil)
	cases := []struct{ path, body, param string }{
		{"/v1/completions", `{"prompt":"Once upon a time","max_tokens":1000000000}`, "max_tokens"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1000000000}`, "max_tokens"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1000000000}`, "max_completion_tokens"},
		// The prompt alone over the limit is still the prompt's fault.
		{"/v1/completions", `{"prompt":"` + strings.Repeat(" x", 600) + `","max_tokens":1000000000}`, "prompt"},
	}
	for _, c := range cases {
		status, _, body := send(t, "POST", ts.url+c.path, c.body, "")
		var e api.ErrorResponse
		json.Unmarshal([]byte(body), &e)
		got := ""
		if e.Error.Param != nil {
			got = *e.Error.Param
		}
		if status != http.StatusBadRequest || got != c.param {
			t.Errorf("%s %.60s: %d param %q, want 400 param %q (%s)", c.path, c.body, status, got, c.param, body)
		}
	}
}
