package router

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/router/routertest"
)

func TestParseLoad(t *testing.T) {
	tests := []struct {
		name, text string
		want       Load
		err        bool
	}{
		{"llmcloud serve", `# HELP vllm:num_requests_running Requests in the running batch.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 3
vllm:num_requests_waiting{model_name="a"} 2
vllm:kv_cache_usage_perc{model_name="a"} 0.25
vllm:prompt_tokens_total{model_name="a"} 1234
`, Load{Running: 3, Waiting: 2, KVUsage: 0.25}, false},
		{"two models, older vLLM name, timestamps, odd labels", `vllm:num_requests_running{model_name="a"} 1 1700000000000
vllm:num_requests_running{model_name="b}\"x"} 2
vllm:num_requests_waiting{engine="0",model_name="a"} 4
vllm:gpu_cache_usage_perc{model_name="a"} 0.5
vllm:gpu_cache_usage_perc{model_name="b"} 0.75
`, Load{Running: 3, Waiting: 4, KVUsage: 0.75}, false},
		{"unlabelled", "vllm:num_requests_running 7\n", Load{Running: 7}, false},
		{"not vLLM", "go_goroutines 12\nprocess_cpu_seconds_total 3\n", Load{}, true},
		{"garbage values skipped", "vllm:num_requests_running{model_name=\"a\"} NaNx\nvllm:num_requests_waiting 1\n", Load{Waiting: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLoad(strings.NewReader(tc.text))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestScrapeLoadOverHTTP(t *testing.T) {
	be := routertest.New("a", 1, 0)
	s := httptest.NewServer(be)
	defer s.Close()
	l, err := ScrapeLoad(context.Background(), nil, s.URL+"/")
	if err != nil || l != (Load{}) {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ScrapeLoad(context.Background(), nil, s.URL+"/nothing"); err == nil {
		t.Fatal("404 not reported")
	}
	s.Close()
	if _, err := ScrapeLoad(context.Background(), nil, s.URL); err == nil {
		t.Fatal("closed server not reported")
	}
}

func TestPromptText(t *testing.T) {
	tests := []struct{ body, session, prompt string }{
		{`{"prompt":"hello there","user":"u1"}`, "u1", "hello there"},
		{`{"prompt":["first","second"]}`, "", "first"},
		{`{"prompt":[1,2,30]}`, "", "1,2,30,"},
		{`{"prompt":[[5,6],[7]]}`, "", "5,6,"},
		{`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"user":"u2"}`,
			"u2", "system\nbe brief\nuser\nab\n"},
		{`not json`, "", ""},
		{`{"prompt":{"x":1}}`, "", ""},
	}
	for _, tc := range tests {
		in := parseInput([]byte(tc.body), "", true, true, false)
		if in.SessionKey != tc.session || in.Prompt != tc.prompt {
			t.Errorf("%s: got %+v", tc.body, in)
		}
	}
	if in := parseInput([]byte(`{"user":"u"}`), "hdr", true, false, false); in.SessionKey != "hdr" {
		t.Errorf("header does not win: %+v", in)
	}
	if in := parseInput([]byte(`{"user":"u","prompt":"p"}`), "", true, false, false); in.SessionKey != "u" || in.Prompt != "" {
		t.Errorf("session only: %+v", in)
	}
}
