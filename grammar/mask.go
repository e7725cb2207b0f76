// This file computes token masks. A lane (a lexer DFA state d over terminals begun at some row)
// allows two kinds of tokens: those whose bytes keep d alive (the terminal goes on: this depends
// on d alone), and those in which a terminal ends at some trie node n, after which the parser
// scans it into a new row whose own lane reads the rest of the token (n's subtree). So a walk
// of the trie from d, stepping the DFA byte by byte and skipping a node's whole subtree when
// the DFA dies, yields a lexEntry: the tokens of the first kind and the nodes where terminals
// end, grouped by the set of terminals ending. Entries are cached per (Grammar, Vocab): the root
// entry by d, a group's child entry by the new lane's start state. FillMask ORs the entries'
// tokens together and consults the parser (rows memoized in the Matcher) once per group.

package grammar

import (
	"math/bits"
	"sync"
)

type lexEntry struct {
	dense  []uint64 // token bitset, or nil
	sparse []int32  // token ids when dense is nil
	groups []lexGroup
}

type lexGroup struct {
	accID int32
	nodes []int32 // trie nodes where those terminals end
	kids  []kid   // child entries by start state (guarded by vcache.mu)
}

type kid struct {
	d *dstate
	e *lexEntry
}

// vcache holds one Grammar's entries for one Vocab.
type vcache struct {
	t     *trie
	lex   *lexer
	words int
	mu    sync.Mutex
	roots map[*dstate]*lexEntry
	bytes int
	max   int
}

type walkScratch struct {
	stk []*dstate
}

func (g *Grammar) vcache(v *Vocab) *vcache {
	g.mu.Lock()
	defer g.mu.Unlock()
	vc := g.caches[v]
	if vc == nil {
		vc = &vcache{t: v.getTrie(), lex: g.lex, words: v.MaskWords(),
			roots: map[*dstate]*lexEntry{}, max: g.maxMem}
		g.caches[v] = vc
	}
	return vc
}

func (e *lexEntry) size() int {
	n := 8*len(e.dense) + 4*len(e.sparse) + 64
	for _, g := range e.groups {
		n += 4*len(g.nodes) + 48
	}
	return n
}

// keep records that e is cached; false when the cache is full (e stays transient).
func (vc *vcache) keep(e *lexEntry) bool {
	if vc.bytes+e.size() > vc.max {
		return false
	}
	vc.bytes += e.size()
	return true
}

func (vc *vcache) root(d *dstate, ws *walkScratch) *lexEntry {
	vc.mu.Lock()
	e := vc.roots[d]
	vc.mu.Unlock()
	if e != nil {
		return e
	}
	e = vc.build(d, []int32{0}, ws)
	vc.mu.Lock()
	if old := vc.roots[d]; old != nil {
		e = old
	} else if vc.keep(e) {
		vc.roots[d] = e
	}
	vc.mu.Unlock()
	return e
}

func (vc *vcache) child(g *lexGroup, d *dstate, ws *walkScratch) *lexEntry {
	vc.mu.Lock()
	for _, k := range g.kids {
		if k.d == d {
			vc.mu.Unlock()
			return k.e
		}
	}
	vc.mu.Unlock()
	e := vc.build(d, g.nodes, ws)
	vc.mu.Lock()
	defer vc.mu.Unlock()
	for _, k := range g.kids {
		if k.d == d {
			return k.e
		}
	}
	if vc.keep(e) {
		g.kids = append(g.kids, kid{d, e})
	}
	return e
}

// build walks the subtrees of roots from DFA state d0.
func (vc *vcache) build(d0 *dstate, roots []int32, ws *walkScratch) *lexEntry {
	t := vc.t
	if len(ws.stk) < t.maxDepth+2 {
		ws.stk = make([]*dstate, t.maxDepth+2)
	}
	stk := ws.stk
	nodes := t.nodes
	lex := vc.lex
	dead := lex.dead
	bm := make([]uint64, vc.words)
	ntok := 0
	e := &lexEntry{}
	group := map[int32]int{}
	loops := func(d *dstate) uint8 {
		if v := d.loops.Load(); v >= 0 {
			return uint8(v)
		}
		return lex.loopGroups(d)
	}
	for _, r := range roots {
		stk[nodes[r].depth] = d0
		end := nodes[r].skip
		for i := r + 1; i < end; {
			nd := &nodes[i]
			s := stk[nd.depth-1]
			x := s.next[nd.b].Load()
			if x == nil {
				x = lex.step(s, nd.b)
			}
			if x == dead {
				i = nd.skip
				continue
			}
			stk[nd.depth] = x
			if x.accID < 0 && nd.desc != 0 && skipAll(nd, loops(x), x) {
				// every byte below keeps x: the whole subtree is allowed
				for _, k := range t.tokList[t.tokPos[i]:t.tokPos[nd.skip]] {
					bm[k>>6] |= 1 << (k & 63)
				}
				ntok += int(t.tokPos[nd.skip] - t.tokPos[i])
				i = nd.skip
				continue
			}
			if k := nd.tok; k >= 0 {
				bm[k>>6] |= 1 << (k & 63)
				ntok++
				if nd.dup {
					for _, k := range t.dups[i] {
						bm[k>>6] |= 1 << (k & 63)
					}
				}
			}
			if x.accID >= 0 {
				gi, ok := group[x.accID]
				if !ok {
					gi = len(e.groups)
					group[x.accID] = gi
					e.groups = append(e.groups, lexGroup{accID: x.accID})
				}
				e.groups[gi].nodes = append(e.groups[gi].nodes, i)
			}
			i++
		}
	}
	if ntok > vc.words/2 {
		e.dense = bm
		return e
	}
	e.sparse = make([]int32, 0, ntok)
	for i, w := range bm {
		for ; w != 0; w &= w - 1 {
			e.sparse = append(e.sparse, int32(64*i+bits.TrailingZeros64(w)))
		}
	}
	return e
}

// skipAll reports whether every node below nd keeps DFA state x (after nd) alive with no
// terminal ending: the bytes below are in groups x loops on, and non-ASCII bytes below form
// valid UTF-8 (a character cut at a token's end included) when x loops on all of UTF-8.
func skipAll(nd *tnode, loops uint8, x *dstate) bool {
	const nonASCII = 1 << 7
	if nd.desc&^(loops|nonASCII) != 0 {
		return false
	}
	return nd.desc&nonASCII == 0 || (nd.utf8&1 != 0 && loopsUTF8(x))
}

// FillMask sets bit i of mask (mask[i/64] >> (i%64) & 1) for every token i that may come next
// and clears the others. len(mask) must be at least v.MaskWords().
func (m *Matcher) FillMask(mask []uint64) {
	mask = mask[:m.vc.words]
	clear(mask)
	for _, ln := range m.lanes {
		m.walkEntry(m.vc.root(ln.d, &m.walk), ln.row, mask)
	}
	if m.CanEnd() {
		for i, w := range m.vc.t.eos {
			mask[i] |= w
		}
	}
}

func (m *Matcher) walkEntry(e *lexEntry, rowIdx int32, mask []uint64) {
	if e.dense != nil {
		mask = mask[:len(e.dense)]
		for i, w := range e.dense {
			mask[i] |= w
		}
	} else {
		for _, k := range e.sparse {
			mask[k>>6] |= 1 << (k & 63)
		}
	}
	dead := m.g.lex.dead
	for gi := range e.groups {
		g := &e.groups[gi]
		idx := int32(len(m.rows))
		r := m.newRow(rowIdx, g.accID, idx)
		if r.start == dead {
			continue
		}
		m.rows = append(m.rows, r)
		m.walkEntry(m.vc.child(g, r.start, &m.walk), idx, mask)
		m.rows = m.rows[:idx]
	}
}
