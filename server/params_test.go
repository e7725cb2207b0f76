// params_test.go posts one bad field at a time to every endpoint and checks that the error
// names that field in param, with the status and type OpenAI gives (issue 17).
package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
)

// paramCase is one request with one bad field; param "" means the body must carry param null.
type paramCase struct {
	path, body string
	status     int
	param      string
}

func TestErrorParams(t *testing.T) {
	ts := chatServer(t, Options{}) // max-model-len 256, byte vocabulary
	long := strings.Repeat("x", 300)
	const (
		chat = "/v1/chat/completions"
		cmpl = "/v1/completions"
		resp = "/v1/responses"
		tok  = "/tokenize"
		detk = "/detokenize"
	)
	msgs := `"messages":[{"role":"user","content":"hi"}],"max_tokens":2`
	weather := `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`
	c := func(path, fields string, status int, param string) paramCase {
		return paramCase{path, fields, status, param}
	}
	cases := []paramCase{
		// chat: the messages, pointing into them
		c(chat, `{"max_tokens":2}`, 400, "messages"),
		c(chat, `{"messages":"hi"}`, 400, "messages"),
		c(chat, `{"messages":[]}`, 400, "messages"),
		c(chat, `{"messages":[1]}`, 400, "messages[0]"),
		c(chat, `{"messages":[{"content":"hi"}]}`, 400, "messages[0].role"),
		c(chat, `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":5}]}`, 400, "messages[2].content"),
		c(chat, `{"messages":[{"role":"user","content":[7]}]}`, 400, "messages[0].content[0]"),
		c(chat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages[0].content[0].type"),
		c(chat, `{"messages":[{"role":"user","content":[{"type":"text","text":3}]}]}`, 400, "messages[0].content[0].text"),
		c(chat, `{"messages":[{"role":"assistant","tool_calls":"x"}]}`, 400, "messages[0].tool_calls"),
		c(chat, `{"messages":[{"role":"user","content":"`+long+`"}]}`, 400, "messages"),
		// chat: the other fields
		c(chat, `{`+msgs+`,"model":"gpt-9"}`, 404, "model"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, 400, "max_tokens"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1000000000}`, 400, "max_tokens"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":9223372036854775807}`, 400, "max_tokens"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1e30}`, 400, "max_tokens"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0}`, 400, "max_completion_tokens"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1000000000}`, 400, "max_completion_tokens"),
		c(chat, `{`+msgs+`,"temperature":-1}`, 400, "temperature"),
		c(chat, `{`+msgs+`,"temperature":"hot"}`, 400, "temperature"),
		c(chat, `{`+msgs+`,"top_p":2}`, 400, "top_p"),
		c(chat, `{`+msgs+`,"n":0}`, 400, "n"),
		c(chat, `{`+msgs+`,"stop":5}`, 400, "stop"),
		c(chat, `{`+msgs+`,"logprobs":"yes"}`, 400, "logprobs"),
		c(chat, `{`+msgs+`,"logprobs":true,"top_logprobs":50}`, 400, "top_logprobs"),
		c(chat, `{`+msgs+`,"logprobs":true,"top_logprobs":-1}`, 400, "top_logprobs"),
		c(chat, `{`+msgs+`,"top_logprobs":2}`, 400, "top_logprobs"),
		c(chat, `{`+msgs+`,"response_format":{"type":"xml"}}`, 400, "response_format.type"),
		c(chat, `{`+msgs+`,"response_format":"json"}`, 400, "response_format"),
		c(chat, `{`+msgs+`,"tools":{"a":1}}`, 400, "tools"),
		c(chat, `{`+msgs+`,"tools":[`+weather+`],"tool_choice":"sometimes"}`, 400, "tool_choice"),
		c(chat, `{`+msgs+`,"seed":"abc"}`, 400, "seed"),
		c(chat, `{`+msgs+`,"presence_penalty":5}`, 400, "presence_penalty"),
		c(chat, `{`+msgs+`,"frequency_penalty":-3}`, 400, "frequency_penalty"),
		c(chat, `{`+msgs+`,"logit_bias":{"x":1}}`, 400, "logit_bias"),
		c(chat, `{`+msgs+`,"stream_options":{"include_usage":true}}`, 400, "stream_options"),
		c(chat, `{`+msgs+`,"stream":true,"stream_options":{"include_usage":"yes"}}`, 400, "stream_options.include_usage"),
		c(chat, `{`+msgs+`,"chat_template_kwargs":[1]}`, 400, "chat_template_kwargs"),
		c(chat, `{"messages":[{"role":"user","content":"hi"}`, 400, ""), // malformed JSON

		// completions
		c(cmpl, `{"max_tokens":2}`, 400, "prompt"),
		c(cmpl, `{"prompt":5}`, 400, "prompt"),
		c(cmpl, `{"prompt":[]}`, 400, "prompt"),
		c(cmpl, `{"prompt":[[1,2],[99999]]}`, 400, "prompt"),
		c(cmpl, `{"prompt":"`+long+`"}`, 400, "prompt"),
		c(cmpl, `{"prompt":"hi","model":"gpt-9"}`, 404, "model"),
		c(cmpl, `{"prompt":"hi","max_tokens":-1}`, 400, "max_tokens"),
		c(cmpl, `{"prompt":"hi","max_tokens":1000000000}`, 400, "max_tokens"),
		c(cmpl, `{"prompt":"hi","max_tokens":9223372036854775807}`, 400, "max_tokens"),
		c(cmpl, `{"prompt":"hi","logprobs":50}`, 400, "logprobs"),
		c(cmpl, `{"prompt":"hi","logprobs":-1}`, 400, "logprobs"),
		c(cmpl, `{"prompt":"hi","top_p":0}`, 400, "top_p"),
		c(cmpl, `{"prompt":"hi","n":100}`, 400, "n"),
		c(cmpl, `{"prompt":"hi","echo":"x"}`, 400, "echo"),
		c(cmpl, `{"prompt":"hi","suffix":"x"}`, 400, "suffix"),
		c(cmpl, `{"prompt":"hi","best_of":3}`, 400, "best_of"),
		c(cmpl, `{"prompt":"hi","stream_options":{"include_usage":true}}`, 400, "stream_options"),
		c(cmpl, `{"prompt":"hi","response_format":{"type":"json_schema"}}`, 400, "response_format.json_schema.schema"),
		c(cmpl, `{"prompt":"hi","logit_bias":{"1":500}}`, 400, "logit_bias"),
		c(cmpl, `{"prompt":"hi","seed":1.5}`, 400, "seed"),
		c(cmpl, `{"prompt":"hi","stop_token_ids":[-1]}`, 400, "stop_token_ids"),
		c(cmpl, `{"prompt":"hi",}`, 400, ""), // malformed JSON

		// responses
		c(resp, `{"max_output_tokens":2}`, 400, "input"),
		c(resp, `{"input":5}`, 400, "input"),
		c(resp, `{"input":[]}`, 400, "input"),
		c(resp, `{"input":[{"role":"robot","content":"x"}]}`, 400, "input"),
		c(resp, `{"input":"`+long+`"}`, 400, "input"),
		c(resp, `{"input":"hi","model":"gpt-9"}`, 404, "model"),
		c(resp, `{"input":"hi","max_output_tokens":0}`, 400, "max_output_tokens"),
		c(resp, `{"input":"hi","max_output_tokens":1000000000}`, 400, "max_output_tokens"),
		c(resp, `{"input":"hi","temperature":-1}`, 400, "temperature"),
		c(resp, `{"input":"hi","top_p":5}`, 400, "top_p"),
		c(resp, `{"input":"hi","tools":{"a":1}}`, 400, "tools"),
		c(resp, `{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":"sometimes"}`, 400, "tool_choice"),
		c(resp, `{"input":"hi","text":{"format":{"type":"xml"}}}`, 400, "text.format.type"),
		c(resp, `{"input":"hi","previous_response_id":"resp_1"}`, 400, "previous_response_id"),
		c(resp, `{"input":"hi","max_output_tokens":"many"}`, 400, "max_output_tokens"),

		// tokenize, detokenize
		c(tok, `{}`, 400, "prompt"),
		c(tok, `{"prompt":5}`, 400, "prompt"),
		c(tok, `{"prompt":"hi","model":"gpt-9"}`, 404, "model"),
		c(tok, `{"messages":[{"content":"x"}]}`, 400, "messages[0].role"),
		c(tok, `{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":3}`, 400, "chat_template_kwargs"),
		c(detk, `{"tokens":[-1]}`, 400, "tokens"),
		c(detk, `{"tokens":"abc"}`, 400, "tokens"),
		c(detk, `{"tokens":[1],"model":"gpt-9"}`, 404, "model"),
		c(detk, `[`, 400, ""),
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, pc := range cases {
		status, _, body := send(t, "POST", ts.url+pc.path, pc.body, "")
		var e api.ErrorResponse
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Errorf("%s %.80s: %d, body not an error object: %s", pc.path, pc.body, status, body)
			continue
		}
		got := "<null>"
		if e.Error.Param != nil {
			got = *e.Error.Param
		}
		want := pc.param
		if want == "" {
			want = "<null>"
		}
		wantType := "invalid_request_error" // an unknown model too, as OpenAI answers it
		if status != pc.status || got != want || e.Error.Type != wantType || e.Error.Message == "" {
			t.Errorf("%s %.80s: %d %s param %s, want %d %s param %s (%s)", pc.path, pc.body, status,
				e.Error.Type, got, pc.status, wantType, want, strings.TrimSpace(e.Error.Message))
		}
		if pc.status == 404 && e.Error.Code != "model_not_found" {
			t.Errorf("%s %.80s: code %q, want model_not_found", pc.path, pc.body, e.Error.Code)
		}
	}
}
