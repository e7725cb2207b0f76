// Package grammar constrains generation to a formal language: JSON Schema, regular
// expressions, llama.cpp's GBNF and Lark-style EBNF all compile to one intermediate form (IR:
// a context-free grammar whose terminals are regular expressions over bytes), which Compile
// turns into a Grammar: lexer DFAs for the terminals under an Earley parser. A Matcher follows
// one sequence through a Grammar token by token and computes, for the model's whole
// vocabulary, which tokens may come next (a bitmask the sampler applies).
//
// The package has no model inside: it sees tokens only as byte strings (Vocab).
//
// Frontends (each in its own file): JSONSchema, Regex, Choice, GBNF, Lark. The IR is in ir.go;
// the engine (lexer, parser, masks) in the remaining files.
package grammar
