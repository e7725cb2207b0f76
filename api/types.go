// Package api holds the OpenAI-compatible wire types the server speaks and the benchmark
// client and router read: completions, chat completions (and their streamed chunks), models,
// tokenize/detokenize and the error body, plus a Server-Sent Events writer and reader
// (sse.go). It imports nothing of the project, so any client can use it.
//
// Fields that take several JSON shapes (prompt, stop, messages, content) are kept as
// json.RawMessage in requests; the server decodes them with the helpers in decode.go.
package api

import "encoding/json"

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	Model  string          `json:"model"`
	Prompt json.RawMessage `json:"prompt"` // string | []string | []int | [][]int
	SamplingFields
	StructuredFields
	Echo     bool `json:"echo,omitempty"`
	Logprobs *int `json:"logprobs,omitempty"` // top logprobs per token, 0..20
	// AddSpecialTokens (vLLM; default true) lets the tokenizer add BOS to text prompts.
	AddSpecialTokens *bool `json:"add_special_tokens,omitempty"`
}

// ChatCompletionRequest is the body of POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Model    string          `json:"model"`
	Messages json.RawMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools,omitempty"`
	// ToolChoice is "none", "auto", "required" or {"type": "function", "function": {"name": X}}.
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// Functions and FunctionCall are OpenAI's deprecated forms of tools; refused (400).
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
	SamplingFields
	StructuredFields
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
	Logprobs            bool `json:"logprobs,omitempty"`
	TopLogprobs         *int `json:"top_logprobs,omitempty"`
	// ChatTemplateKwargs are extra template variables (vLLM's chat_template_kwargs).
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs,omitempty"`
	// AddGenerationPrompt (vLLM; default true) ends the prompt with the assistant's header.
	AddGenerationPrompt *bool `json:"add_generation_prompt,omitempty"`
}

// SamplingFields are the request fields both endpoints share. Pointers tell "absent" from 0
// so the model's generation_config.json defaults apply to absent fields.
type SamplingFields struct {
	MaxTokens         *int               `json:"max_tokens,omitempty"`
	Temperature       *float64           `json:"temperature,omitempty"`
	TopP              *float64           `json:"top_p,omitempty"`
	TopK              *int               `json:"top_k,omitempty"`
	MinP              *float64           `json:"min_p,omitempty"`
	PresencePenalty   *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty,omitempty"`
	RepetitionPenalty *float64           `json:"repetition_penalty,omitempty"`
	Seed              *int64             `json:"seed,omitempty"`
	Stop              json.RawMessage    `json:"stop,omitempty"` // string | []string
	StopTokenIDs      []int              `json:"stop_token_ids,omitempty"`
	N                 *int               `json:"n,omitempty"`
	LogitBias         map[string]float64 `json:"logit_bias,omitempty"`
	IgnoreEOS         bool               `json:"ignore_eos,omitempty"`
	User              string             `json:"user,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
	StreamOptions     *StreamOptions     `json:"stream_options,omitempty"`
	// CacheSalt (vLLM) isolates the request's prefix-cache entries: only equal salts share.
	CacheSalt string `json:"cache_salt,omitempty"`
}

// StreamOptions asks for a last chunk carrying the usage.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Usage counts a response's tokens.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails reports prompt tokens served from the prefix cache.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionResponse is the body of a non-streamed completion, and (with Object
// "text_completion" and Usage usually nil) each streamed chunk.
type CompletionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // "text_completion"
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage"`
}

// CompletionChoice is one completion.
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"` // null while streaming
}

// CompletionLogprobs is the legacy completions logprobs shape: parallel arrays, one entry per
// token. TokenLogprobs entries are null for echoed prompt tokens.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// ChatCompletionResponse is the body of a non-streamed chat completion.
type ChatCompletionResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage"`
}

// ChatChoice is one chat completion.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChatMessage   `json:"message"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

// ChatMessage is an assistant message in a response. Content is null when the reply is only
// tool calls; ReasoningContent (vLLM's name) and Reasoning (newer vLLM's) carry the reasoning
// a --reasoning-parser split off.
type ChatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Reasoning        *string    `json:"reasoning,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunk is one streamed chat event.
type ChatCompletionChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"` // "chat.completion.chunk"
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []ChatChunkChoice `json:"choices"`
	Usage   *Usage            `json:"usage"`
}

// ChatChunkChoice is one choice's delta.
type ChatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        ChatDelta     `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// ChatDelta is the new part of the assistant message.
type ChatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          string          `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Reasoning        string          `json:"reasoning,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ChatLogprobs is the chat logprobs shape.
type ChatLogprobs struct {
	Content []ChatTokenLogprob `json:"content"`
}

// ChatTokenLogprob is one sampled token with its most likely alternatives.
type ChatTokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// Model is one served model.
type Model struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "model"
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root,omitempty"`
	Parent      string `json:"parent,omitempty"` // a LoRA adapter's base model (vLLM)
	MaxModelLen int    `json:"max_model_len,omitempty"`
	// KVRole is an llmcloud replica's part in disaggregated prefill/decode (serve --kv-role:
	// producer, consumer or both; absent: none), read by the router's pd policy.
	KVRole string `json:"kv_role,omitempty"`
}

// TokenizeRequest is the body of POST /tokenize: a prompt, or chat messages rendered through
// the chat template.
type TokenizeRequest struct {
	Model               string          `json:"model,omitempty"`
	Prompt              *string         `json:"prompt,omitempty"`
	Messages            json.RawMessage `json:"messages,omitempty"`
	AddSpecialTokens    *bool           `json:"add_special_tokens,omitempty"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt,omitempty"`
	Tools               json.RawMessage `json:"tools,omitempty"`                // rendered with messages
	ChatTemplateKwargs  json.RawMessage `json:"chat_template_kwargs,omitempty"` // rendered with messages
}

// TokenizeResponse lists the token ids.
type TokenizeResponse struct {
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
	Tokens      []int `json:"tokens"`
}

// DetokenizeRequest is the body of POST /detokenize.
type DetokenizeRequest struct {
	Model  string `json:"model,omitempty"`
	Tokens []int  `json:"tokens"`
}

// DetokenizeResponse is the text of the tokens.
type DetokenizeResponse struct {
	Prompt string `json:"prompt"`
}

// VersionResponse is the body of GET /version.
type VersionResponse struct {
	Version string `json:"version"`
}

// ErrorResponse is every error body: {"error": {...}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is OpenAI's error object. Param names the offending request field.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}
