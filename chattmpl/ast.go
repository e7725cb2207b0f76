// This file defines the syntax tree produced by the parser: statements (text, output, if, for,
// set, macro, call, filter blocks, break/continue) and expressions.
package chattmpl

import "fmt"

var sprintf = fmt.Sprintf

type node interface{ position() int }

type base struct{ pos int }

func (b base) position() int { return b.pos }

// Statements.
type (
	textNode struct {
		base
		text string
	}
	commentNode struct{ base }
	ifNode      struct {
		base
		test      node
		body, alt []node
	}
	forNode struct {
		base
		target    node // *identNode or *tupleNode
		iter      node // may be *selectNode (for x in y if cond)
		body, alt []node
	}
	setNode struct {
		base
		target node
		value  node // nil for a block set
		body   []node
	}
	macroNode struct {
		base
		name   string
		params []node // *identNode or *kwargNode
		body   []node
	}
	callBlockNode struct {
		base
		call         *callNode
		callerParams []node
		body         []node
	}
	filterBlockNode struct {
		base
		filter *filterNode // operand unused
		body   []node
	}
	breakNode    struct{ base }
	continueNode struct{ base }
)

// Expressions.
type (
	litNode struct {
		base
		v any // int64, float64 or string
	}
	identNode struct {
		base
		name string
	}
	listNode struct {
		base
		items []node
	}
	tupleNode struct {
		base
		items []node
	}
	dictNode struct {
		base
		keys, vals []node
	}
	memberNode struct {
		base
		obj      node
		prop     node // *identNode or *litNode (int) when !computed
		computed bool
	}
	sliceNode struct {
		base
		start, stop, step node // nil when omitted
	}
	callNode struct {
		base
		callee node
		args   []node // may contain *kwargNode, *spreadNode, *kwSpreadNode
	}
	kwargNode struct {
		base
		key   string
		value node
	}
	spreadNode struct {
		base
		x node
	}
	kwSpreadNode struct {
		base
		x node
	}
	unaryNode struct {
		base
		op string
		x  node
	}
	binaryNode struct {
		base
		op   string
		l, r node
	}
	filterNode struct {
		base
		x       node
		name    string
		args    []node
		hasCall bool
	}
	testNode struct {
		base
		x      node
		negate bool
		name   string
		args   []node
	}
	selectNode struct {
		base
		lhs, test node
	}
	ternaryNode struct {
		base
		cond, a, b node
	}
)
