// Fuzzing the handlers: any request body on any endpoint gets a 2xx or 4xx answer, never a
// 5xx or a crash. The model is tiny and max-model-len small, so accepted requests finish fast.
package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
)

var fuzzPaths = []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}

func FuzzHandlers(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"hello","max_tokens":3}`,
		`{"prompt":["a","b"],"n":2,"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[1,2,3],"logprobs":2,"echo":true,"max_tokens":2,"temperature":0.7,"seed":-3}`,
		`{"prompt":[[1,2],[3]],"stop":["x"],"stop_token_ids":[5],"logit_bias":{"7":5},"ignore_eos":true,"max_tokens":2}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3,"logprobs":true,"top_logprobs":2}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"type":"function","function":{"name":"f"}}],"stream":true,"max_tokens":2}`,
		`{"messages":[{"role":"user","content":"hi"}],"top_k":3,"min_p":0.1,"top_p":0.5,"repetition_penalty":1.2,"presence_penalty":1,"frequency_penalty":-1}`,
		`{"tokens":[1,2,3]}`, `{"prompt":"x","add_special_tokens":false}`, `{"messages":[{"role":"user"}]}`,
		`{"prompt":"x","temperature":"hot"}`, `[]`, `null`, `{`, ``,
	} {
		for i := range fuzzPaths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	ts := startServer(f, synthModel(f, f.TempDir(), 64), Options{ServedModelNames: []string{"tiny"}, MaxBodyBytes: 1 << 16},
		func(o *engine.Options) {
			o.Scheduler.NumBlocks = 64
			o.Scheduler.MaxModelLenTokens = 64
			o.MaxQueuedRequests = 512
		})
	f.Fuzz(func(t *testing.T, pathIdx uint8, body []byte) {
		path := fuzzPaths[int(pathIdx)%len(fuzzPaths)]
		rec := &recorder{h: http.Header{}}
		req, err := http.NewRequest("POST", path, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		ts.srv.Handler().ServeHTTP(rec, req)
		code := rec.code
		if code == 0 {
			code = 200
		}
		if code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, code, rec.body.String())
		}
	})
}
