// Package structcheck holds the end-to-end checks of structured output (issue 16) that need
// the grammar engine, the serving engine and an independent JSON Schema validator together:
// bulk constrained generation from a random-weight model (every output must validate) and the
// throughput of constrained against unconstrained decoding. Only tests live here; see
// docs/structured-output-clients.md.
package structcheck
