package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestFailureReasons(t *testing.T) {
	long := "HTTP 400: the prompt (1124 tokens) plus max_tokens (128) is 1252 tokens, 996 tokens over max-model-len 256"
	errs := []string{"", long, "HTTP 500: the prompt (1124 tokens) plus max_tokens (128) is 1252 tokens, 996 tokens over max-model-len 256",
		"HTTP 400: the prompt (1131 tokens) plus max_tokens (128) is 1259 tokens, 1003 tokens over max-model-len 256",
		"HTTP 503: the model is still loading", "", long + strings.Repeat(" é", 200)}
	for i := range 6 {
		errs = append(errs, "reason "+string(rune('a'+i)))
	}
	got := FailureReasons(errs)
	if len(got) != maxReasons+1 {
		t.Fatalf("%d reasons: %+v", len(got), got)
	}
	if got[0].Count != 2 || got[0].Reason != long {
		t.Errorf("first reason %+v, want 2 x %q", got[0], long)
	}
	if r := got[3]; !strings.HasSuffix(r.Reason, "...") || len(r.Reason) > maxReasonLen || !strings.HasPrefix(r.Reason, long) {
		t.Errorf("long reason not shortened: %q", r.Reason)
	}
	if last := got[maxReasons]; last.Count != 5 || last.Reason != "(5 other reasons)" {
		t.Errorf("last %+v", last)
	}
	if FailureReasons([]string{"", ""}) != nil {
		t.Error("reasons without a failure")
	}

	var out bytes.Buffer
	Print(&out, &Result{Failed: 3, FailureReasons: got[:2]})
	if !strings.Contains(out.String(), "Failed requests:                         3\n  2 x "+long+"\n  1 x HTTP 500: the prompt (1124 tokens)") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestHTTPFailure(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{`{"error":{"message":"too long","type":"invalid_request_error","code":400}}`, "HTTP 400: too long"},
		{`{"object":"error","message":"old vllm","type":"BadRequestError","code":400}`, "HTTP 400: old vllm"},
		{`{"error":"plain"}`, "HTTP 400: plain"},
		{"<html>\n  <body>Bad   gateway</body>\n</html>", "HTTP 400: <html> <body>Bad gateway</body> </html>"},
		{"", "HTTP 400 (empty body)"},
	} {
		if got := httpFailure(400, []byte(c.body)); got != c.want {
			t.Errorf("%q: got %q, want %q", c.body, got, c.want)
		}
	}
}
