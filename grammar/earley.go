// This file is the Earley parser over terminals. A row is the Earley set at a byte position
// where some terminal ended: items (a dotted production and the row it started in), closed
// under prediction and completion (nullable symbols are stepped over when predicted, as
// Aycock and Horspool do, so completion never looks at the row being built). Rows are
// immutable once built and shared (a Matcher's stack holds them; mask walks push and pop them).

package grammar

import "slices"

// item is a dotted production, its origin row and, in a counted rule R -> x (R = x{lo,hi}),
// how many x have been read (capped at lo when hi is unbounded: more are all alike).
type item struct{ dot, origin, cnt int32 }

// adv is it with the dot moved over one symbol.
func (g *cgrammar) adv(it item) item {
	if d := &g.dots[it.dot]; d.counted {
		n := it.cnt + 1
		if d.hi < 0 {
			n = min(n, d.lo)
		}
		return item{it.dot + 1, it.origin, n}
	}
	return item{it.dot + 1, it.origin, 0}
}

type row struct {
	items  []item
	start  *dstate // lexer state beginning every terminal the row expects (dead: none)
	accept bool    // S' -> Start . with origin 0: the bytes so far are a sentence
}

// parseScratch is a Matcher's reusable memory for building rows.
type parseScratch struct {
	seen  []uint32 // per dot: generation (for items of origin cur)
	old   map[item]struct{}
	gen   uint32
	items []item
	terms []int32
	tmark []uint32
}

func (ps *parseScratch) init(g *cgrammar) {
	ps.seen = make([]uint32, len(g.dots))
	ps.tmark = make([]uint32, g.nT)
	ps.old = map[item]struct{}{}
}

// add puts it in ps.items unless it is there already.
func (ps *parseScratch) add(it item, cur int32) {
	if it.origin == cur {
		if ps.seen[it.dot] == ps.gen {
			return
		}
		ps.seen[it.dot] = ps.gen
	} else {
		if _, ok := ps.old[it]; ok {
			return
		}
		ps.old[it] = struct{}{}
	}
	ps.items = append(ps.items, it)
}

func (ps *parseScratch) reset() {
	ps.gen++
	if ps.gen == 0 {
		clear(ps.seen)
		clear(ps.tmark)
		ps.gen = 1
	}
	clear(ps.old)
	ps.items = ps.items[:0]
	ps.terms = ps.terms[:0]
}

// seedScan adds to ps.items the items of r advanced over a terminal in acc (a terminal
// bitset). Call ps.reset first (once for all seeds of a row).
func (g *cgrammar) seedScan(ps *parseScratch, r *row, acc []uint64, cur int32) {
	for _, it := range r.items {
		s := g.dots[it.dot].sym
		if s >= 0 && s < g.nT && acc[s>>6]>>(s&63)&1 != 0 {
			ps.add(g.adv(it), cur)
		}
	}
}

// close completes ps.items into the row at index cur (rows[:cur] are the rows before it).
func (g *cgrammar) close(ps *parseScratch, rows []*row, cur int32, lex *lexer) *row {
	r := &row{}
	for i := 0; i < len(ps.items); i++ {
		it := ps.items[i]
		d := g.dots[it.dot]
		switch {
		case d.sym < 0: // complete
			if d.counted {
				if d.hi < 0 || it.cnt < d.hi {
					ps.add(item{it.dot - 1, it.origin, it.cnt}, cur) // one more x
				}
				if it.cnt < d.lo {
					continue
				}
			}
			if it.dot == g.acceptDot && it.origin == 0 {
				r.accept = true
			}
			if it.origin == cur {
				continue // nullable: stepped over when predicted
			}
			for _, o := range rows[it.origin].items {
				if g.dots[o.dot].sym == d.lhs {
					ps.add(g.adv(o), cur)
				}
			}
		case d.sym >= g.nT: // predict
			for _, p := range g.prods[d.sym-g.nT] {
				ps.add(item{p, cur, 0}, cur)
			}
			if g.nullable[d.sym] && !d.counted {
				ps.add(g.adv(it), cur)
			}
		default: // a terminal: expected here
			if ps.tmark[d.sym] != ps.gen {
				ps.tmark[d.sym] = ps.gen
				ps.terms = append(ps.terms, d.sym)
			}
			if g.nullable[d.sym] && !d.counted {
				ps.add(g.adv(it), cur)
			}
		}
	}
	r.items = slices.Clone(ps.items)
	slices.Sort(ps.terms)
	r.start = lex.start(ps.terms)
	return r
}

// firstRow is the row at position 0.
func (g *cgrammar) firstRow(ps *parseScratch, lex *lexer) *row {
	ps.reset()
	ps.add(item{g.prods[g.start-g.nT][0], 0, 0}, 0)
	return g.close(ps, nil, 0, lex)
}
