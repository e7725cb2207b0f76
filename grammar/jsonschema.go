// This file compiles JSON Schema to the IR.
// STUB: the signature is final; the body is being written (issue 16).

package grammar

import "errors"

// SchemaOptions configures JSONSchema.
type SchemaOptions struct {
	// Whitespace allows JSON whitespace between tokens; false = compact JSON only (as
	// json.Marshal writes it), which keeps a weak model from wandering into whitespace.
	Whitespace bool
}

// JSONSchema compiles a JSON Schema (draft 2020-12 and older drafts' forms) to an IR whose
// language is the JSON texts the schema accepts. An invalid or unsatisfiable schema is an error
// naming the keyword and the reason.
func JSONSchema(schema []byte, opt SchemaOptions) (*IR, error) {
	return nil, errors.New("grammar: JSON Schema not implemented yet")
}
