// This file reads grammars as users write them: llama.cpp's GBNF and Lark-style EBNF.
// STUB: the signatures are final; the bodies are being written (issue 16).

package grammar

import "errors"

// GBNF parses a grammar in llama.cpp's GBNF (root rule "root").
func GBNF(src string) (*IR, error) { return nil, errors.New("grammar: GBNF not implemented yet") }

// Lark parses a grammar in Lark's EBNF (start rule "start"; terminals in UPPER case).
func Lark(src string) (*IR, error) { return nil, errors.New("grammar: Lark not implemented yet") }

// EBNF parses src as GBNF when it defines rules with "::=", else as Lark.
func EBNF(src string) (*IR, error) { return nil, errors.New("grammar: EBNF not implemented yet") }
