// This file has llguidance's %json extension of Lark: `name: %json { schema }` matches the JSON
// texts the schema accepts (compact, as grammar.JSONSchema writes them by default). The
// schema's rules join the grammar under a prefix of their own ("%json1:", "%json2:", ...).

package grammar

import "fmt"

// larkJSONPrefix starts the names of the rules %json brings in (no Lark name has a %).
const larkJSONPrefix = "%json"

func (p *larkParser) jsonSchema(t larkTok) (*Expr, error) {
	if t.kind != ltJSON {
		return nil, p.errAt(t.pos, "%%json needs a JSON object after it")
	}
	if p.inTerm != "" {
		return nil, p.errAt(t.pos, "%%json cannot be used in a terminal or %%ignore (it is not regular)")
	}
	ir, err := JSONSchema([]byte(t.text), SchemaOptions{})
	if err != nil {
		return nil, p.errAt(t.pos, "%%json: %v", err)
	}
	prefix := fmt.Sprintf("%s%d:", larkJSONPrefix, len(p.jsonStarts)+1)
	p.jsonStarts = append(p.jsonStarts, prefix+ir.Start)
	for name, e := range ir.Rules {
		p.jsons[prefix+name] = renameRefs(e, prefix)
	}
	return Ref(prefix + ir.Start), nil
}

// renameRefs copies e with every rule reference prefixed.
func renameRefs(e *Expr, prefix string) *Expr {
	out := *e
	if e.Kind == KindRef {
		out.Text = prefix + e.Text
	}
	if len(e.Subs) > 0 {
		out.Subs = make([]*Expr, len(e.Subs))
		for i, s := range e.Subs {
			out.Subs[i] = renameRefs(s, prefix)
		}
	}
	return &out
}
