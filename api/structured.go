// Structured-output request fields: OpenAI's response_format, vLLM's structured_outputs and
// the older vLLM guided_* fields. Both generation endpoints take all of them; at most one may
// constrain a request.
package api

import "encoding/json"

// StructuredFields are the structured-output fields of a completions or chat request.
type StructuredFields struct {
	ResponseFormat    *ResponseFormat    `json:"response_format,omitempty"`
	StructuredOutputs *StructuredOutputs `json:"structured_outputs,omitempty"`
	// vLLM's older fields.
	GuidedJSON              json.RawMessage `json:"guided_json,omitempty"` // a schema object, or a string holding one
	GuidedRegex             *string         `json:"guided_regex,omitempty"`
	GuidedChoice            []string        `json:"guided_choice,omitempty"`
	GuidedGrammar           *string         `json:"guided_grammar,omitempty"` // GBNF or Lark
	GuidedDecodingBackend   string          `json:"guided_decoding_backend,omitempty"`
	GuidedWhitespacePattern *string         `json:"guided_whitespace_pattern,omitempty"`
}

// ResponseFormat is OpenAI's response_format: {"type": "text" | "json_object" | "json_schema"}.
type ResponseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *JSONSchemaFormat `json:"json_schema,omitempty"`
}

// JSONSchemaFormat is response_format.json_schema.
type JSONSchemaFormat struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// StructuredOutputs is vLLM's structured_outputs object: exactly one of JSON, Regex, Choice,
// Grammar, JSONObject (or StructuralTag, which llmcloud refuses).
type StructuredOutputs struct {
	JSON          json.RawMessage `json:"json,omitempty"` // a schema object, or a string holding one
	Regex         *string         `json:"regex,omitempty"`
	Choice        []string        `json:"choice,omitempty"`
	Grammar       *string         `json:"grammar,omitempty"`
	JSONObject    *bool           `json:"json_object,omitempty"`
	StructuralTag json.RawMessage `json:"structural_tag,omitempty"`
	// Options vLLM takes with them.
	DisableFallback             *bool   `json:"disable_fallback,omitempty"`
	DisableAnyWhitespace        *bool   `json:"disable_any_whitespace,omitempty"`
	DisableAdditionalProperties *bool   `json:"disable_additional_properties,omitempty"`
	WhitespacePattern           *string `json:"whitespace_pattern,omitempty"`
	Backend                     string  `json:"backend,omitempty"`
}
