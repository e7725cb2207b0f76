// This file parses Lark's EBNF.

package grammar

import "errors"

func parseLark(src string) (*IR, error) { return nil, errors.New("grammar: Lark not implemented yet") }
