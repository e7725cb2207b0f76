// Known request fields llmcloud does not honour are refused with a 400 naming them, never
// silently ignored; each is allowed only at the value that asks for nothing (its default).
// Unknown fields stay allowed: SDKs send extras.
package server

import (
	"bytes"
	"encoding/json"
)

// refusal is one field refused unless ok(its raw value).
type refusal struct {
	field string
	ok    func(raw json.RawMessage) bool
	why   string // what the 400 says after "<field> is not supported"
}

func isNull(raw json.RawMessage) bool { return !present(raw) }

func isFalse(raw json.RawMessage) bool {
	return isNull(raw) || bytes.Equal(bytes.TrimSpace(raw), []byte("false"))
}

func isTrue(raw json.RawMessage) bool {
	return isNull(raw) || bytes.Equal(bytes.TrimSpace(raw), []byte("true"))
}

func isNumber(v float64) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var f float64
		return isNull(raw) || (json.Unmarshal(raw, &f) == nil && f == v)
	}
}

// isEmpty: null, "", [] or {}.
func isEmpty(raw json.RawMessage) bool {
	if isNull(raw) {
		return true
	}
	switch string(bytes.TrimSpace(raw)) {
	case `""`, `[]`, `{}`:
		return true
	}
	return false
}

func isString(vals ...string) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var s string
		if isNull(raw) {
			return true
		}
		if json.Unmarshal(raw, &s) != nil {
			return false
		}
		for _, v := range vals {
			if s == v {
				return true
			}
		}
		return false
	}
}

// textOnly: modalities absent or ["text"].
func textOnly(raw json.RawMessage) bool {
	var m []string
	return isNull(raw) || (json.Unmarshal(raw, &m) == nil && (len(m) == 0 || (len(m) == 1 && m[0] == "text")))
}

// allNull: absent, or an object whose values are all null (reasoning: {"effort": null}).
func allNull(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if isNull(raw) {
		return true
	}
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, v := range m {
		if present(v) {
			return false
		}
	}
	return true
}

// generateRefused are the fields of both generation endpoints.
var generateRefused = []refusal{
	{"min_tokens", isNumber(0), "yet: EOS and stops are allowed from the first token"},
	{"include_stop_str_in_output", isFalse, "yet: the stop string is never included"},
	{"skip_special_tokens", isTrue, ": special tokens are always left out of the text"},
	{"truncate_prompt_tokens", isNull, "yet: a prompt over max-model-len is a 400"},
	{"prompt_logprobs", isNull, "yet"},
	{"bad_words", isEmpty, "yet"},
	{"allowed_token_ids", isEmpty, "yet (logit_bias is)"},
	{"priority", isNumber(0), ": requests run first come, first served"},
	{"use_beam_search", isFalse, ": no beam search"},
	{"length_penalty", isNumber(1), ": no beam search"},
	{"return_tokens_as_token_ids", isFalse, "yet"},
	{"logits_processors", isEmpty, ""},
	{"kv_transfer_params", isNull, ": no disaggregated prefill"},
	{"vllm_xargs", isEmpty, ""},
}

// chatRefused are the chat endpoint's own.
var chatRefused = []refusal{
	{"echo", isFalse, "on chat completions yet"},
	{"continue_final_message", isFalse, "yet: the generation prompt is always added"},
	{"chat_template", isEmpty, " in a request: use serve --chat-template"},
	{"documents", isEmpty, "yet"},
	{"mm_processor_kwargs", isEmpty, ": no multimodal input"},
	{"audio", isNull, ": text output only"},
	{"modalities", textOnly, ": text output only"},
	{"web_search_options", isNull, ": no web search"},
	{"prediction", isNull, " (predicted outputs)"},
	{"verbosity", isNull, ""},
}

// completionsRefused are the completions endpoint's own.
var completionsRefused = []refusal{
	{"suffix", isEmpty, ": no fill-in-the-middle"},
}

// responsesRefused are the Responses API's.
var responsesRefused = []refusal{
	{"reasoning", allNull, " yet: no reasoning parser"},
	{"include", isEmpty, ""},
	{"background", isFalse, ": responses run in the foreground"},
	{"truncation", isString("disabled"), ": an input over max-model-len is a 400"},
	{"top_logprobs", isNumber(0), " in the Responses API yet"},
	{"prompt", isNull, " (stored prompt templates)"},
	{"conversation", isNull, ": llmcloud stores no conversations"},
	{"max_tool_calls", isNull, "yet"},
}

// refuseFields checks a body's known-but-unsupported fields against the tables.
func refuseFields(body []byte, tables ...[]refusal) *apiError {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil // not an object: the typed decode said so already
	}
	for _, t := range tables {
		for _, r := range t {
			if raw, ok := m[r.field]; ok && !r.ok(raw) {
				return badRequest(r.field, "%s is not supported%s (got %s)", r.field, r.why, bytes.TrimSpace(raw))
			}
		}
	}
	return nil
}

// refuseBestOf: best_of asks for more samples than it returns unless it is 1 or n.
func refuseBestOf(body []byte, n int) *apiError {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || !present(m["best_of"]) {
		return nil
	}
	var bestOf int
	if err := json.Unmarshal(m["best_of"], &bestOf); err != nil {
		return badRequest("best_of", "best_of must be an integer, got %s", m["best_of"])
	}
	if bestOf <= 1 || bestOf == n {
		return nil
	}
	return badRequest("best_of", "best_of is not supported yet: each choice is one sample (best_of %d, n %d)", bestOf, n)
}
