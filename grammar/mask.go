// This file computes token masks. A lane (a lexer DFA state d over terminals begun at some row)
// allows two kinds of tokens: those whose bytes keep d alive (the terminal goes on: this depends
// on d alone), and those in which a terminal ends at some trie node n, after which the parser
// scans it into a new row whose own lane reads the rest of the token (n's subtree). So a walk
// of the trie from d, stepping the DFA byte by byte and skipping a node's whole subtree when
// the DFA dies, yields a lexEntry: the tokens of the first kind and the nodes where terminals
// end, grouped by the set of terminals ending. Entries depend on the lexer alone, so they are
// cached per Vocab for every grammar under canonical state names (canon.go): the root entry by
// d, a group's child entry by the group and the new lane's start state; each Grammar keeps a
// front cache by its own state pointers. FillMask ORs the entries' tokens together and consults
// the parser (rows memoized in the Matcher) once per group.

package grammar

import (
	"slices"
	"sync"
)

type lexEntry struct {
	dense  []uint64 // token bitset, or nil
	sparse []int32  // token ids when dense is nil
	groups []lexGroup
}

type lexGroup struct {
	accKey string  // the terminals that end (canonical names, see canon.go)
	nodes  []int32 // trie nodes where they end
	bulk   []int32 // trie nodes at every node below which they end too (ASCII subtrees)
}

// sharedCache holds a Vocab's entries for every grammar, by canonical state name (and for a
// child entry, the group it continues).
type sharedCache struct {
	mu    sync.Mutex
	m     map[sharedKey]*lexEntry
	old   map[sharedKey]*lexEntry // the generation before m: entries used again move to m
	bytes int                     // of m
}

type sharedKey struct {
	g *lexGroup // nil: a root entry
	d string
}

const sharedMaxBytes = 192 << 20 // per generation

func (v *Vocab) getShared() *sharedCache {
	v.shareOnce.Do(func() { v.shared = &sharedCache{m: map[sharedKey]*lexEntry{}} })
	return v.shared
}

// drop forgets every entry (benchmarks of the first grammar a process sees).
func (sc *sharedCache) drop() {
	sc.mu.Lock()
	sc.m, sc.old, sc.bytes = map[sharedKey]*lexEntry{}, nil, 0
	sc.mu.Unlock()
}

// put adds e to the current generation; a full generation becomes the old one (and the old
// one is dropped: Grammars keep the entries they use in their own vcache).
func (sc *sharedCache) put(key sharedKey, e *lexEntry) {
	if sc.bytes+e.size() > sharedMaxBytes {
		sc.old, sc.m, sc.bytes = sc.m, map[sharedKey]*lexEntry{}, 0
	}
	sc.m[key] = e
	sc.bytes += e.size()
}

type kidKey struct {
	g *lexGroup
	d *dstate
}

// vcache is one Grammar's view of a Vocab's entries: by its own state pointers (so the hot path
// hashes no names) and the accIDs its groups' terminal sets have here.
type vcache struct {
	t      *trie
	lex    *lexer
	words  int
	shared *sharedCache
	mu     sync.Mutex
	roots  map[*dstate]*lexEntry
	kids   map[kidKey]*lexEntry
	accs   map[*lexGroup]int32
	subs   map[subKey]*subEntry // see mask_sub.go
	bytes  int                  // of the entries in roots and kids
	max    int
}

const vcacheMaxEntries = 1 << 16

// rngPool holds range lists grown by earlier walks.
var rngPool sync.Pool

type walkScratch struct {
	stk []*dstate
}

func (g *Grammar) vcache(v *Vocab) *vcache {
	g.mu.Lock()
	defer g.mu.Unlock()
	vc := g.caches[v]
	if vc == nil {
		vc = &vcache{t: v.getTrie(), lex: g.lex, words: v.MaskWords(), shared: v.getShared(),
			roots: map[*dstate]*lexEntry{}, kids: map[kidKey]*lexEntry{}, accs: map[*lexGroup]int32{},
			max: g.maxMem}
		g.caches[v] = vc
	}
	return vc
}

func (e *lexEntry) size() int {
	n := 8*len(e.dense) + 4*len(e.sparse) + 64
	for _, g := range e.groups {
		n += 4*len(g.nodes) + 4*len(g.bulk) + len(g.accKey) + 48
	}
	return n
}

// entry returns the walk from d of the trie (g nil) or of the subtrees of g's nodes.
func (vc *vcache) entry(g *lexGroup, d *dstate, ws *walkScratch) *lexEntry {
	vc.mu.Lock()
	var e *lexEntry
	if g == nil {
		e = vc.roots[d]
	} else {
		e = vc.kids[kidKey{g, d}]
	}
	vc.mu.Unlock()
	if e != nil {
		return e
	}
	key := sharedKey{g, vc.lex.canon(d)}
	sc := vc.shared
	sc.mu.Lock()
	e = sc.m[key]
	if e == nil && sc.old[key] != nil {
		e = sc.old[key]
		sc.put(key, e)
	}
	sc.mu.Unlock()
	if e == nil {
		roots, bulk := []int32{0}, []int32(nil)
		if g != nil {
			roots, bulk = g.nodes, g.bulk
		}
		e = vc.build(d, roots, bulk, ws)
		sc.mu.Lock()
		if old := sc.m[key]; old != nil {
			e = old
		} else {
			sc.put(key, e)
		}
		sc.mu.Unlock()
	}
	vc.mu.Lock()
	if len(vc.roots)+len(vc.kids) < vcacheMaxEntries && vc.bytes+e.size() <= vc.max {
		vc.bytes += e.size()
		if g == nil {
			vc.roots[d] = e
		} else {
			vc.kids[kidKey{g, d}] = e
		}
	}
	vc.mu.Unlock()
	return e
}

// acc returns the accID of g's terminal set in this grammar.
func (vc *vcache) acc(g *lexGroup) int32 {
	vc.mu.Lock()
	id, ok := vc.accs[g]
	vc.mu.Unlock()
	if ok {
		return id
	}
	id = vc.lex.localAcc(g.accKey)
	vc.mu.Lock()
	if len(vc.accs) < vcacheMaxEntries {
		vc.accs[g] = id
	}
	vc.mu.Unlock()
	return id
}

// build walks the subtrees of roots from DFA state d0, and the subtrees of every node below
// the bulk nodes.
func (vc *vcache) build(d0 *dstate, roots, bulk []int32, ws *walkScratch) *lexEntry {
	t := vc.t
	// the range list is borrowed for the walk (lists grown by earlier walks of any Matcher)
	out := walkOut{group: map[int32]int{}}
	if p, ok := rngPool.Get().(*[][2]int32); ok {
		out.rng = (*p)[:0]
	}
	vc.walkInto(d0, roots, bulk, ws, &out)
	rng := out.rng
	defer func() { rngPool.Put(&rng) }()
	e := &lexEntry{groups: out.groups}
	for i := range e.groups {
		e.groups[i].accKey = vc.lex.accKey(out.accIDs[i])
	}
	n := 0
	for _, r := range rng {
		n += int(r[1] - r[0])
	}
	list := t.tokList
	switch {
	case n <= vc.words/2:
		e.sparse = make([]int32, 0, n)
		for _, r := range rng {
			e.sparse = append(e.sparse, list[r[0]:r[1]]...)
		}
	case len(roots) == 1 && roots[0] == 0 && len(bulk) == 0 && 2*n > len(list):
		// a whole-trie walk allowing most tokens: all of them but the gaps between ranges
		e.dense = slices.Clone(t.all)
		p := int32(0)
		for _, r := range append(rng, [2]int32{int32(len(list)), 0}) {
			for _, k := range list[p:r[0]] {
				e.dense[k>>6] &^= 1 << (k & 63)
			}
			p = r[1]
		}
	default:
		e.dense = make([]uint64, vc.words)
		for _, r := range rng {
			for _, k := range list[r[0]:r[1]] {
				e.dense[k>>6] |= 1 << (k & 63)
			}
		}
	}
	return e
}

// walkInto walks the subtrees of roots from DFA state d0, and the subtrees of every node below
// the bulk nodes, adding what it allows to out.
func (vc *vcache) walkInto(d0 *dstate, roots, bulk []int32, ws *walkScratch, out *walkOut) {
	t := vc.t
	if len(ws.stk) < t.maxDepth+2 {
		ws.stk = make([]*dstate, t.maxDepth+2)
	}
	stk := ws.stk
	nodes := t.nodes
	lex := vc.lex
	dead := lex.dead
	// whole non-ASCII subtrees are skipped from the walk's own state and from states that loop
	// on all ASCII text (the UTF-8 loop test costs a few thousand steps: not for every state)
	utf8Root := lex.loopGroups(d0) != 0 && lex.loopsUTF8(d0)
	loops := func(d *dstate) uint8 {
		if v := d.loops.Load(); v >= 0 {
			return uint8(v)
		}
		return lex.loopGroups(d)
	}
	groupOf := out.groupOf
	allow := out.allow
	walk := func(r int32) {
		if k := &t.kids[r]; k[0]&d0.bytes[0]|k[1]&d0.bytes[1]|k[2]&d0.bytes[2]|k[3]&d0.bytes[3] == 0 {
			return // no child byte can start d0
		}
		stk[nodes[r].depth] = d0
		end := nodes[r].skip
		for i := r + 1; i < end; {
			nd := &nodes[i]
			s := stk[nd.depth-1]
			x := s.next[nd.b].Load()
			if x == nil {
				if s.allows(nd.b) {
					x = lex.step(s, nd.b)
				} else {
					x = dead
				}
			}
			if x == dead {
				i = nd.skip
				continue
			}
			stk[nd.depth] = x
			if nd.desc != 0 {
				if lp := loops(x); x.accID < 0 && skipAll(nd, lp, (x == d0 && utf8Root) ||
					(lp&textGroups == textGroups && nd.desc&nonASCII != 0 && lex.loopsUTF8(x))) {
					// every byte below keeps x: the whole subtree is allowed
					allow(t.tokPos[i], t.tokPos[nd.skip])
					i = nd.skip
					continue
				}
				if x.accID < 0 && (nd.desc&^textGroups == 0 && lex.textRun(x, int(nd.h), false) ||
					nd.desc&^(textGroups|nonASCII) == 0 && nd.utf8&1 != 0 && lex.textRun(x, int(nd.h), true)) {
					// every byte below is plain text (or UTF-8) and the run of x is long enough
					allow(t.tokPos[i], t.tokPos[nd.skip])
					i = nd.skip
					continue
				}
				if x.accID >= 0 && nd.desc&^loops(x) == 0 {
					// every (ASCII) byte below keeps x, which ends terminals: the subtree is
					// allowed and every node in it is a place where they end
					allow(t.tokPos[i], t.tokPos[nd.skip])
					g := groupOf(x.accID)
					g.nodes = append(g.nodes, i)
					g.bulk = append(g.bulk, i)
					i = nd.skip
					continue
				}
			}
			if x.accID < 0 && nd.skip-i >= subMinNodes && x != d0 {
				// a large subtree in a state other than the walk's own: its walk is remembered
				// (other walks reach the same state there, see mask_sub.go)
				if nd.tok >= 0 {
					allow(t.tokPos[i], t.tokPos[i+1])
				}
				out.add(vc.sub(x, i))
				i = nd.skip
				continue
			}
			if nd.tok >= 0 {
				allow(t.tokPos[i], t.tokPos[i+1])
			}
			if x.accID >= 0 && nd.skip > i+1 { // (a leaf has nothing below for the parser's lane)
				g := groupOf(x.accID)
				g.nodes = append(g.nodes, i)
			}
			i++
		}
	}
	for _, r := range roots {
		walk(r)
	}
	if len(bulk) > 0 {
		var can uint8 // byte groups d0 may read
		for b := range 256 {
			if d0.allows(byte(b)) {
				can |= byteGroup(byte(b))
			}
		}
		for _, r := range bulk {
			if nodes[r].desc&can == 0 {
				continue // no node below can start d0
			}
			for j := r + 1; j < nodes[r].skip; j++ {
				walk(j)
			}
		}
	}
}

// skipAll reports whether every node below nd keeps DFA state x (after nd) alive with no
// terminal ending: the bytes below are in groups x loops on, and non-ASCII bytes below form
// valid UTF-8 (a character cut at a token's end included) when x loops on all of UTF-8 (utf8).
const (
	nonASCII   = 1 << 7
	textGroups = 0x0F // letters, digits, space, other printable ASCII
)

func skipAll(nd *tnode, loops uint8, utf8 bool) bool {
	if nd.desc&^(loops|nonASCII) != 0 {
		return false
	}
	return nd.desc&nonASCII == 0 || (nd.utf8&1 != 0 && utf8)
}

// FillMask sets bit i of mask (mask[i/64] >> (i%64) & 1) for every token i that may come next
// and clears the others. len(mask) must be at least v.MaskWords().
func (m *Matcher) FillMask(mask []uint64) {
	mask = mask[:m.vc.words]
	clear(mask)
	for _, ln := range m.lanes {
		m.walkEntry(m.vc.entry(nil, ln.d, &m.walk), ln.row, mask)
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
		acc := m.vc.acc(g)
		if acc < 0 {
			continue
		}
		r := m.newRow(rowIdx, acc, idx)
		if r.start == dead {
			continue
		}
		m.rows = append(m.rows, r)
		m.walkEntry(m.vc.entry(g, r.start, &m.walk), idx, mask)
		m.rows = m.rows[:idx]
	}
}
