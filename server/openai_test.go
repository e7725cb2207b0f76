// The OpenAI-compatibility suite: the official Go client (openai-go) against the real server
// on loopback, every endpoint and request field, streamed and not.
package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

const prompt = "Once upon a time"

func client(ts *testServer, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{option.WithBaseURL(ts.url + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}
	return openai.NewClient(append(base, opts...)...)
}

func cmplParams(p string, maxTokens int64) openai.CompletionNewParams {
	return openai.CompletionNewParams{Model: "stories", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(p)},
		MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(0)}
}

func storiesServer(t *testing.T) *testServer {
	return startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories", "alias"}, LogRequests: true}, nil)
}

func TestCompletionsFields(t *testing.T) {
	ts := storiesServer(t)
	c := client(ts)
	ctx := context.Background()
	greedy, err := c.Completions.New(ctx, cmplParams(prompt, 20))
	if err != nil {
		t.Fatal(err)
	}
	g := greedy.Choices[0]
	if g.FinishReason != "length" || greedy.Usage.CompletionTokens != 20 || greedy.Usage.PromptTokens == 0 ||
		greedy.Usage.TotalTokens != greedy.Usage.PromptTokens+20 || greedy.Model != "stories" || greedy.Object != "text_completion" {
		t.Fatalf("greedy: %+v", greedy)
	}
	t.Logf("greedy: %q", g.Text)
	again, err := c.Completions.New(ctx, cmplParams(prompt, 20))
	if err != nil || again.Choices[0].Text != g.Text {
		t.Fatalf("greedy is not repeatable: %q vs %q (%v)", again.Choices[0].Text, g.Text, err)
	}

	t.Run("stream", func(t *testing.T) {
		p := cmplParams(prompt, 20)
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Completions.NewStreaming(ctx, p)
		var text, finish string
		var usage openai.CompletionUsage
		chunks := 0
		for st.Next() {
			ch := st.Current()
			chunks++
			if len(ch.Choices) > 0 {
				text += ch.Choices[0].Text
				if ch.Choices[0].FinishReason != "" {
					finish = string(ch.Choices[0].FinishReason)
				}
			} else {
				usage = ch.Usage
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if text != g.Text || finish != "length" || usage.CompletionTokens != 20 || chunks < 3 {
			t.Fatalf("stream: %q finish %q usage %+v chunks %d", text, finish, usage, chunks)
		}
	})

	t.Run("stop", func(t *testing.T) {
		i := strings.Index(g.Text[1:], " ") + 1
		stop := g.Text[i : i+3]
		for _, su := range []openai.CompletionNewParamsStopUnion{{OfString: openai.String(stop)}, {OfStringArray: []string{"zzzz", stop}}} {
			p := cmplParams(prompt, 20)
			p.Stop = su
			r, err := c.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if r.Choices[0].Text != g.Text[:i] || r.Choices[0].FinishReason != "stop" {
				t.Fatalf("stop %q: %q, %s", stop, r.Choices[0].Text, r.Choices[0].FinishReason)
			}
		}
	})

	t.Run("logit_bias,stop_token_ids,ignore_eos", func(t *testing.T) {
		p := cmplParams(prompt, 5)
		p.LogitBias = map[string]int64{"300": 100}
		r, err := c.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat(ts.bund.Tok.Decode([]int{300}), 5)
		if got := r.Choices[0].Text; got != want && ts.bund.Tok.Decode([]int{300, 300, 300, 300, 300}) != got {
			t.Fatalf("logit_bias: %q, want %q", got, want)
		}
		r, err = c.Completions.New(ctx, p, option.WithJSONSet("stop_token_ids", []int{300}))
		if err != nil {
			t.Fatal(err)
		}
		if r.Choices[0].FinishReason != "stop" || r.Usage.CompletionTokens != 1 || r.Choices[0].Text != "" {
			t.Fatalf("stop_token_ids: %+v", r)
		}
		eos := strconv.Itoa(ts.bund.Tok.EOS())
		p.LogitBias = map[string]int64{eos: 100}
		r, err = c.Completions.New(ctx, p)
		if err != nil || r.Choices[0].FinishReason != "stop" || r.Usage.CompletionTokens != 1 {
			t.Fatalf("EOS: %+v %v", r, err)
		}
		r, err = c.Completions.New(ctx, p, option.WithJSONSet("ignore_eos", true))
		if err != nil || r.Choices[0].FinishReason != "length" || r.Usage.CompletionTokens != 5 {
			t.Fatalf("ignore_eos: %+v %v", r, err)
		}
	})

	t.Run("sampling fields and seed", func(t *testing.T) {
		p := cmplParams(prompt, 16)
		p.Temperature = openai.Float(1)
		p.TopP = openai.Float(0.9)
		p.Seed = openai.Int(42)
		p.PresencePenalty = openai.Float(0.5)
		p.FrequencyPenalty = openai.Float(0.5)
		p.N = openai.Int(3)
		p.User = openai.String("tester")
		extra := []option.RequestOption{option.WithJSONSet("top_k", 20), option.WithJSONSet("min_p", 0.05),
			option.WithJSONSet("repetition_penalty", 1.1)}
		a, err := c.Completions.New(ctx, p, extra...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Completions.New(ctx, p, extra...)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Choices) != 3 || a.Usage.CompletionTokens != 48 {
			t.Fatalf("n=3: %+v", a)
		}
		for i := range a.Choices {
			if a.Choices[i].Index != int64(i) || a.Choices[i].Text != b.Choices[i].Text {
				t.Fatalf("seeded choice %d differs: %q vs %q", i, a.Choices[i].Text, b.Choices[i].Text)
			}
		}
		if a.Choices[0].Text == a.Choices[1].Text && a.Choices[1].Text == a.Choices[2].Text {
			t.Errorf("n=3 gave three equal samples: %q", a.Choices[0].Text)
		}
	})

	t.Run("logprobs,echo", func(t *testing.T) {
		p := cmplParams(prompt, 6)
		p.Logprobs = openai.Int(3)
		p.Echo = openai.Bool(true)
		r, err := c.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ch := r.Choices[0]
		lp := ch.Logprobs
		if !strings.HasPrefix(ch.Text, prompt) || ch.Text != prompt+g.Text[:len(ch.Text)-len(prompt)] {
			t.Fatalf("echo: %q", ch.Text)
		}
		if len(lp.Tokens) != 6 || len(lp.TokenLogprobs) != 6 || len(lp.TopLogprobs) != 6 || len(lp.TextOffset) != 6 {
			t.Fatalf("logprobs: %+v", lp)
		}
		for i, top := range lp.TopLogprobs {
			if len(top) != 3 {
				t.Fatalf("top_logprobs[%d] = %v, want 3 entries", i, top)
			}
			if lp.TokenLogprobs[i] > 0 {
				t.Fatalf("logprob %d positive: %v", i, lp.TokenLogprobs[i])
			}
		}
		if lp.TextOffset[0] != int64(len(prompt)) {
			t.Fatalf("text_offset %v", lp.TextOffset)
		}
	})

	t.Run("prompt shapes", func(t *testing.T) {
		ids := ts.bund.Tok.Encode(prompt, true, true)
		ids64 := make([]int64, len(ids))
		for i, id := range ids {
			ids64[i] = int64(id)
		}
		for name, pu := range map[string]openai.CompletionNewParamsPromptUnion{
			"strings":  {OfArrayOfStrings: []string{prompt, prompt}},
			"ids":      {OfArrayOfTokens: ids64},
			"id lists": {OfArrayOfTokenArrays: [][]int64{ids64, ids64}},
		} {
			p := cmplParams("", 20)
			p.Prompt = pu
			r, err := c.Completions.New(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, ch := range r.Choices {
				if ch.Text != g.Text || ch.Index != int64(i) {
					t.Fatalf("%s: choice %d: %q", name, i, ch.Text)
				}
			}
			if want := map[string]int{"strings": 2, "ids": 1, "id lists": 2}[name]; len(r.Choices) != want ||
				r.Usage.PromptTokens != int64(want*len(ids)) {
				t.Fatalf("%s: %d choices, usage %+v", name, len(r.Choices), r.Usage)
			}
		}
	})
}

func chatServer(t *testing.T, opts Options) *testServer {
	opts.ServedModelNames = []string{"tiny"}
	return startServer(t, synthModel(t, t.TempDir(), 256), opts, nil)
}

func TestChatCompletions(t *testing.T) {
	ts := chatServer(t, Options{LogRequests: true})
	c := client(ts)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")}
	p := openai.ChatCompletionNewParams{Model: "tiny", Messages: msgs, MaxCompletionTokens: openai.Int(12),
		Temperature: openai.Float(0), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather"})}}
	r, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Choices[0]
	if r.Object != "chat.completion" || ch.Message.Role != "assistant" || ch.FinishReason != "length" ||
		r.Usage.CompletionTokens != 12 || len(ch.Logprobs.Content) != 12 || len(ch.Logprobs.Content[0].TopLogprobs) != 2 {
		t.Fatalf("chat: %+v", r)
	}
	// The prompt is the template's rendering, tools included: /tokenize renders the same
	// messages without tools, and the byte vocabulary makes token counts add up.
	var tok api.TokenizeResponse
	body := map[string]any{"messages": []map[string]any{{"role": "system", "content": "be brief"},
		{"role": "user", "content": []map[string]string{{"type": "text", "text": "hello"}}}}}
	if err := c.Post(ctx, "tokenize", body, &tok, option.WithBaseURL(ts.url+"/")); err != nil {
		t.Fatal(err)
	}
	toolsLine := len(ts.bund.Tok.Encode("[tools: get_weather]\n", false, true))
	if int64(tok.Count+toolsLine) != r.Usage.PromptTokens {
		t.Fatalf("chat prompt %d tokens; tokenize without tools %d + tools line %d", r.Usage.PromptTokens, tok.Count, toolsLine)
	}

	p.Logprobs = openai.Bool(false)
	p.TopLogprobs = openai.Int(0)
	p.N = openai.Int(2)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	texts := make([]string, 2)
	finish := make([]string, 2)
	var usage openai.CompletionUsage
	for st.Next() {
		chunk := st.Current()
		if chunk.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", chunk.Object)
		}
		for _, cc := range chunk.Choices {
			texts[cc.Index] += cc.Delta.Content
			if cc.FinishReason != "" {
				finish[cc.Index] = cc.FinishReason
			}
		}
		if len(chunk.Choices) == 0 {
			usage = chunk.Usage
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if texts[i] != ch.Message.Content || finish[i] != "length" {
			t.Fatalf("streamed choice %d: %q (%s), want %q", i, texts[i], finish[i], ch.Message.Content)
		}
	}
	if usage.CompletionTokens != 24 || usage.PromptTokens != r.Usage.PromptTokens {
		t.Fatalf("stream usage %+v", usage)
	}

	// max_tokens (the older field) and a stop list work the same.
	p2 := openai.ChatCompletionNewParams{Model: "tiny", Messages: msgs, MaxTokens: openai.Int(5), Temperature: openai.Float(0),
		Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"\x00never"}}}
	r2, err := c.Chat.Completions.New(ctx, p2)
	if err != nil || r2.Usage.CompletionTokens != 5 {
		t.Fatalf("max_tokens: %+v %v", r2, err)
	}
}

func TestModelsTokenizeHealthVersionMetrics(t *testing.T) {
	ts := storiesServer(t)
	c := client(ts)
	ctx := context.Background()
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != "stories" || page.Data[1].ID != "alias" {
		t.Fatalf("models: %+v", page.Data)
	}
	var tok api.TokenizeResponse
	if err := c.Post(ctx, "tokenize", map[string]any{"prompt": prompt}, &tok, option.WithBaseURL(ts.url+"/")); err != nil {
		t.Fatal(err)
	}
	want := ts.bund.Tok.Encode(prompt, true, true)
	if fmt.Sprint(tok.Tokens) != fmt.Sprint(want) || tok.Count != len(want) || tok.MaxModelLen != 512 {
		t.Fatalf("tokenize: %+v, want %v", tok, want)
	}
	var det api.DetokenizeResponse
	if err := c.Post(ctx, "detokenize", map[string]any{"tokens": want[1:]}, &det, option.WithBaseURL(ts.url+"/")); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(det.Prompt) != prompt {
		t.Fatalf("detokenize: %q", det.Prompt)
	}
	for path, want := range map[string]int{"/health": 200, "/version": 200, "/metrics": 200, "/nope": 404} {
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if _, err := c.Completions.New(ctx, cmplParams(prompt, 8)); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, ts.url)
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total",
		`vllm:request_success_total{finished_reason="length"`, "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count", "vllm:e2e_request_latency_seconds_count",
		"vllm:request_queue_time_seconds_count", "vllm:request_prefill_time_seconds_count", "vllm:request_decode_time_seconds_count",
		"vllm:request_prompt_tokens_count", "vllm:request_generation_tokens_count", "vllm:iteration_tokens_total_count",
		"go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(m, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	if v := metricValue(t, m, `vllm:generation_tokens_total{model_name="stories"}`); v < 8 {
		t.Errorf("generation tokens %v", v)
	}
}

func scrape(t testing.TB, url string) string {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func metricValue(t testing.TB, text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}
