// Structured output, the request side: which field constrains the output (OpenAI's
// response_format, vLLM's structured_outputs or its older guided_* fields, the Responses API's
// text.format), checked and reduced to one constraintSpec; more than one is a 400 naming both.
// structured_cache.go compiles a spec into a grammar once and makes a Matcher per choice.
package server

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/grammar"
)

// Kinds of constraint (the first half of a compiled grammar's cache key).
const (
	kindJSON    = "json"
	kindRegex   = "regex"
	kindChoice  = "choice"
	kindGrammar = "grammar"
)

// constraintSpec is one request's constraint before compilation.
type constraintSpec struct {
	param   string   // the request field, for errors: "response_format.json_schema.schema"
	kind    string   // kindJSON, kindRegex, kindChoice, kindGrammar
	text    string   // the schema (compact JSON), the regex or the grammar source
	choices []string // kindChoice
}

// key is the spec's canonical text for the grammar cache.
func (c *constraintSpec) key() string {
	if c.kind == kindChoice {
		b, _ := json.Marshal(c.choices)
		return c.kind + "\x00" + string(b)
	}
	return c.kind + "\x00" + c.text
}

// ir runs the spec's frontend.
func (c *constraintSpec) ir() (*grammar.IR, error) {
	switch c.kind {
	case kindJSON:
		return grammar.JSONSchema([]byte(c.text), grammar.SchemaOptions{CloseObjects: true})
	case kindRegex:
		return grammar.Regex(c.text)
	case kindChoice:
		return grammar.Choice(c.choices)
	default:
		return grammar.EBNF(c.text)
	}
}

// objectSchema is the schema of json_object: any JSON object.
const objectSchema = `{"type":"object"}`

// present reports whether a raw JSON field was given (absent and null are not).
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// schemaSpec reads a schema given as a JSON object (or boolean), or as a string holding one.
func schemaSpec(param string, raw json.RawMessage) (*constraintSpec, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest(param, "%s: %v", param, err)
		}
		raw = []byte(strings.TrimSpace(s))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, badRequest(param, "%s is not a JSON schema: %v", param, err)
	}
	if c := buf.Bytes()[0]; c != '{' && c != 't' && c != 'f' {
		return nil, badRequest(param, "%s must be a JSON Schema object, got %s", param, buf.String())
	}
	return &constraintSpec{param: param, kind: kindJSON, text: buf.String()}, nil
}

// candidate is one field that asks for a constraint.
type candidate struct {
	param string
	spec  func() (*constraintSpec, *apiError)
}

// pickOne checks that at most one candidate is given and builds its spec (nil: none given).
func pickOne(cands []candidate) (*constraintSpec, *apiError) {
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return cands[0].spec()
	}
	return nil, badRequest(cands[1].param, "%s and %s both constrain the output: give one of them",
		cands[0].param, cands[1].param)
}

// structuredSpec reads the structured-output fields of a completions or chat request.
func structuredSpec(f *api.StructuredFields) (*constraintSpec, *apiError) {
	var cands []candidate
	if rf := f.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text":
		case "json_object":
			cands = append(cands, candidate{"response_format", func() (*constraintSpec, *apiError) {
				return &constraintSpec{param: "response_format", kind: kindJSON, text: objectSchema}, nil
			}})
		case "json_schema":
			if rf.JSONSchema == nil || !present(rf.JSONSchema.Schema) {
				return nil, badRequest("response_format.json_schema.schema",
					"response_format of type json_schema needs response_format.json_schema.schema")
			}
			schema := rf.JSONSchema.Schema
			cands = append(cands, candidate{"response_format", func() (*constraintSpec, *apiError) {
				return schemaSpec("response_format.json_schema.schema", schema)
			}})
		default:
			return nil, badRequest("response_format.type",
				"response_format.type must be text, json_object or json_schema, got %q", rf.Type)
		}
	}
	if so := f.StructuredOutputs; so != nil {
		c, e := structuredOutputs(so)
		if e != nil {
			return nil, e
		}
		if c != nil {
			cands = append(cands, *c)
		}
	}
	if present(f.GuidedJSON) {
		raw := f.GuidedJSON
		cands = append(cands, candidate{"guided_json", func() (*constraintSpec, *apiError) { return schemaSpec("guided_json", raw) }})
	}
	if f.GuidedRegex != nil {
		cands = append(cands, regexCand("guided_regex", *f.GuidedRegex))
	}
	if f.GuidedChoice != nil {
		cands = append(cands, choiceCand("guided_choice", f.GuidedChoice))
	}
	if f.GuidedGrammar != nil {
		cands = append(cands, grammarCand("guided_grammar", *f.GuidedGrammar))
	}
	if f.GuidedWhitespacePattern != nil && *f.GuidedWhitespacePattern != "" {
		return nil, badRequest("guided_whitespace_pattern",
			"guided_whitespace_pattern is not supported: JSON output is compact (no whitespace between tokens)")
	}
	return pickOne(cands)
}

// structuredOutputs reads vLLM's structured_outputs object: one of its constraint keys.
func structuredOutputs(so *api.StructuredOutputs) (*candidate, *apiError) {
	if present(so.StructuralTag) {
		return nil, badRequest("structured_outputs.structural_tag", "structured_outputs.structural_tag is not supported")
	}
	if so.WhitespacePattern != nil && *so.WhitespacePattern != "" {
		return nil, badRequest("structured_outputs.whitespace_pattern",
			"structured_outputs.whitespace_pattern is not supported: JSON output is compact (no whitespace between tokens)")
	}
	// disable_additional_properties: true is what every schema gets already (CloseObjects).
	var cands []candidate
	if present(so.JSON) {
		raw := so.JSON
		cands = append(cands, candidate{"structured_outputs.json", func() (*constraintSpec, *apiError) {
			return schemaSpec("structured_outputs.json", raw)
		}})
	}
	if so.Regex != nil {
		cands = append(cands, regexCand("structured_outputs.regex", *so.Regex))
	}
	if so.Choice != nil {
		cands = append(cands, choiceCand("structured_outputs.choice", so.Choice))
	}
	if so.Grammar != nil {
		cands = append(cands, grammarCand("structured_outputs.grammar", *so.Grammar))
	}
	if so.JSONObject != nil && *so.JSONObject {
		cands = append(cands, candidate{"structured_outputs.json_object", func() (*constraintSpec, *apiError) {
			return &constraintSpec{param: "structured_outputs.json_object", kind: kindJSON, text: objectSchema}, nil
		}})
	}
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return &cands[0], nil
	}
	return nil, badRequest(cands[1].param, "%s and %s both constrain the output: give one of them",
		cands[0].param, cands[1].param)
}

func regexCand(param, re string) candidate {
	return candidate{param, func() (*constraintSpec, *apiError) {
		return &constraintSpec{param: param, kind: kindRegex, text: re}, nil
	}}
}

func choiceCand(param string, choices []string) candidate {
	return candidate{param, func() (*constraintSpec, *apiError) {
		if len(choices) == 0 {
			return nil, badRequest(param, "%s needs at least one option", param)
		}
		return &constraintSpec{param: param, kind: kindChoice, choices: choices}, nil
	}}
}

func grammarCand(param, src string) candidate {
	return candidate{param, func() (*constraintSpec, *apiError) {
		if strings.TrimSpace(src) == "" {
			return nil, badRequest(param, "%s is empty", param)
		}
		return &constraintSpec{param: param, kind: kindGrammar, text: src}, nil
	}}
}

// textFormatSpec reads the Responses API's text.format.
func textFormatSpec(t *api.ResponseTextConfig) (*constraintSpec, *apiError) {
	if t == nil {
		return nil, nil
	}
	switch f := t.Format; f.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return &constraintSpec{param: "text.format", kind: kindJSON, text: objectSchema}, nil
	case "json_schema":
		if !present(f.Schema) {
			return nil, badRequest("text.format.schema", "text.format of type json_schema needs text.format.schema")
		}
		return schemaSpec("text.format.schema", f.Schema)
	default:
		return nil, badRequest("text.format.type", "text.format.type must be text, json_object or json_schema, got %q", f.Type)
	}
}

// structured reads and compiles a completions or chat request's constraint: a maker of one
// Matcher per choice (nil: none).
func (st *state) structured(f *api.StructuredFields) (func() engine.Constraint, *apiError) {
	spec, e := structuredSpec(f)
	if e != nil {
		return nil, e
	}
	p, e := st.compileSpec(spec)
	if p == nil || e != nil {
		return nil, e
	}
	return p.NewConstraint, nil
}
