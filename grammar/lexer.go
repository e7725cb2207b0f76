// This file is the lexer: a DFA over the terminals' NFA built lazily, one state per set of NFA
// nodes reached, created the first time a byte leads to it. Transitions are 256-entry tables
// of atomic pointers, so many Matchers read them without locks while one writer (under mu)
// adds states; past the memory cap new states are still made but no longer remembered.

package grammar

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// dstate is one DFA state: the NFA nodes (byte-consuming and match nodes) it stands for.
type dstate struct {
	next  [256]atomic.Pointer[dstate]
	core  []int32                // sorted NFA node ids
	accID int32                  // id of the set of terminals that end here (-1: none)
	grow  bool                   // some byte may follow
	bytes [4]uint64              // the bytes that may follow
	canon atomic.Pointer[string] // see canon.go
	loops atomic.Int32           // byte groups on which every byte leads back here (-1: not computed),
	// and bit 8: every non-ASCII UTF-8 character leads back here (its bytes staying alive)
	succ [2]atomic.Pointer[dstate] // textSucc without and with UTF-8 (nil: not computed)
	runs [2]atomic.Int32           // runLen without and with UTF-8, plus 1 (0: not computed)
}

// utf8Patterns are the byte ranges of every multi-byte UTF-8 character.
var utf8Patterns = [][][2]byte{
	{{0xC2, 0xDF}, {0x80, 0xBF}},
	{{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
	{{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
	{{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
}

// utf8Loops reports whether every multi-byte UTF-8 character leads from d back to d through
// live states.
func (l *lexer) utf8Loops(d *dstate) bool { return l.utf8To(d, d) }

// utf8To reports whether every multi-byte UTF-8 character leads from d to target through live
// states.
func (l *lexer) utf8To(d, target *dstate) bool {
	for _, p := range utf8Patterns {
		set := []*dstate{d}
		for _, rg := range p {
			var next []*dstate
			for _, x := range set {
				for b := int(rg[0]); b <= int(rg[1]); b++ {
					y := l.step(x, byte(b))
					if y == l.dead {
						return false
					}
					if !slices.Contains(next, y) {
						next = append(next, y)
					}
				}
			}
			if len(next) > 4 {
				return false
			}
			set = next
		}
		if len(set) != 1 || set[0] != target {
			return false
		}
	}
	return true
}

// groupBytes holds the bytes of each byte group (bit g: byteGroup 1<<g).
var groupBytes = func() (gs [8][4]uint64) {
	for b := range 256 {
		for g := range 8 {
			if byteGroup(byte(b)) == 1<<g {
				gs[g][b>>6] |= 1 << (b & 63)
			}
		}
	}
	return gs
}()

// loopGroups returns the byte groups (see byteGroup) on all of whose bytes d steps to itself.
func (l *lexer) loopGroups(d *dstate) uint8 {
	if v := d.loops.Load(); v >= 0 {
		return uint8(v)
	}
	var in, out uint8
	for g := range 8 { // a group loops only if all its bytes may follow
		gb := &groupBytes[g]
		if gb[0]&^d.bytes[0]|gb[1]&^d.bytes[1]|gb[2]&^d.bytes[2]|gb[3]&^d.bytes[3] != 0 {
			out |= 1 << g
		}
	}
	// every UTF-8 lead byte (0xC2-0xF4) may follow
	const leadBits = (1<<(0xF5-0xC0) - 1) &^ (1<<(0xC2-0xC0) - 1)
	leads := ^d.bytes[3]&leadBits == 0
	for b := range 256 {
		g := byteGroup(byte(b))
		if out&g != 0 || g == 1<<7 {
			continue
		}
		if l.step(d, byte(b)) == d {
			in |= g
		} else {
			out |= g
		}
	}
	v := int32(in &^ out)
	if leads {
		v |= 1 << 9 // worth asking utf8Loops
	}
	d.loops.Store(v)
	return uint8(v)
}

// loopsUTF8 reports whether every UTF-8 character leads from d back to d (computed once; after
// loopGroups).
func (l *lexer) loopsUTF8(d *dstate) bool {
	v := d.loops.Load()
	if v>>9&1 == 0 {
		return v>>8&1 != 0
	}
	u := int32(0)
	if l.utf8Loops(d) {
		u = 1 << 8
	}
	d.loops.Store(v&^(1<<9) | u)
	return u != 0
}

// allows reports whether byte b may follow.
func (d *dstate) allows(b byte) bool { return d.bytes[b>>6]>>(b&63)&1 != 0 }

const dstateBytes = int(unsafe.Sizeof(dstate{})) + 64

type lexer struct {
	nfa    *nfa
	dead   *dstate
	mu     sync.Mutex
	states map[string]*dstate // by core set
	starts map[string]*dstate // by set of terminals expected
	accIDs map[string]int32
	accs   [][]uint64 // accID -> bitset over terminals
	nbytes int
	max    int
	byKey  map[string]int32 // terminal by canonical name

	// scratch (under mu)
	mark    []uint32
	mark2   []uint32
	mark3   []uint32
	gen     uint32
	atStart bool // closure context: no byte of the terminal read yet
	prev    int  // closure context: the byte just read (-1: none)
	stack   []int32
	set     []int32
	keyb    []byte
}

func newLexer(n *nfa, maxBytes int) *lexer {
	l := &lexer{nfa: n, states: map[string]*dstate{}, starts: map[string]*dstate{},
		accIDs: map[string]int32{}, max: maxBytes, mark: make([]uint32, len(n.nodes)),
		mark2: make([]uint32, len(n.nodes)), mark3: make([]uint32, len(n.nodes))}
	l.dead = &dstate{accID: -1}
	l.dead.loops.Store(0)
	l.dead.succ[0].Store(l.dead)
	l.dead.succ[1].Store(l.dead)
	for i := range l.dead.next {
		l.dead.next[i].Store(l.dead)
	}
	l.states[""] = l.dead
	l.byKey = make(map[string]int32, len(n.keys))
	for t, k := range n.keys {
		l.byKey[k] = int32(t)
	}
	return l
}

// closure adds to l.set the core nodes epsilon-reachable from the nodes in l.stack. Assertions:
// \A passes only at the terminal's start (l.atStart), ^ in multi-line mode also after a
// newline (l.prev), and $ (end of text) passes into a mode where only the end may follow:
// nodes reached after it that would consume a byte are dropped, match nodes kept.
func (l *lexer) closure() {
	const afterEnd = 1 << 30
	for len(l.stack) > 0 {
		v := l.stack[len(l.stack)-1]
		l.stack = l.stack[:len(l.stack)-1]
		i, end := v&^afterEnd, v&afterEnd != 0
		if end {
			if l.mark2[i] == l.gen {
				continue
			}
			l.mark2[i] = l.gen
		} else {
			if l.mark[i] == l.gen {
				continue
			}
			l.mark[i] = l.gen
		}
		x := &l.nfa.nodes[i]
		switch x.kind {
		case nEps:
			for _, o := range x.outs {
				l.stack = append(l.stack, o|v&afterEnd)
			}
		case nAssert:
			switch x.lo {
			case aBeginText:
				if l.atStart {
					l.stack = append(l.stack, x.out|v&afterEnd)
				}
			case aBeginLine:
				if l.atStart || l.prev == '\n' {
					l.stack = append(l.stack, x.out|v&afterEnd)
				}
			case aEndText:
				l.stack = append(l.stack, x.out|afterEnd)
			}
		case nMatch:
			if l.mark3[i] != l.gen {
				l.mark3[i] = l.gen
				l.set = append(l.set, i)
			}
		default: // a byte node: kept if what follows it can still match
			if !end && l.nfa.live[x.out] && l.mark3[i] != l.gen {
				l.mark3[i] = l.gen
				l.set = append(l.set, i)
			}
		}
	}
}

func (l *lexer) newGen() {
	l.gen++
	if l.gen == 0 {
		clear(l.mark)
		clear(l.mark2)
		clear(l.mark3)
		l.gen = 1
	}
	l.set = l.set[:0]
	l.stack = l.stack[:0]
}

// intern returns the state for l.set (sorted here); ok is false when it was not remembered.
func (l *lexer) intern() (*dstate, bool) {
	if len(l.set) == 0 {
		return l.dead, true
	}
	slices.Sort(l.set)
	l.keyb = l.keyb[:0]
	for _, v := range l.set {
		l.keyb = append(l.keyb, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	if d, ok := l.states[string(l.keyb)]; ok {
		return d, true
	}
	d := &dstate{core: slices.Clone(l.set), accID: -1}
	d.loops.Store(-1)
	var acc []int32
	for _, v := range d.core {
		x := &l.nfa.nodes[v]
		if x.kind == nMatch {
			acc = append(acc, x.term)
			continue
		}
		d.grow = true
		for b := int(x.lo); b <= int(x.hi); b++ {
			d.bytes[b>>6] |= 1 << (b & 63)
		}
	}
	if len(acc) > 0 {
		d.accID = l.accID(acc)
	}
	// (bytes that cannot follow keep a nil transition: step answers dead for them unlocked)
	if l.nbytes+dstateBytes+8*len(d.core) > l.max {
		return d, false
	}
	l.nbytes += dstateBytes + 8*len(d.core)
	l.states[string(l.keyb)] = d
	return d, true
}

// accID interns a set of terminals (sorted).
func (l *lexer) accID(acc []int32) int32 {
	k := make([]byte, 0, 4*len(acc))
	for _, v := range acc {
		k = append(k, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	if id, ok := l.accIDs[string(k)]; ok {
		return id
	}
	bits := make([]uint64, (len(l.nfa.starts)+63)/64)
	for _, t := range acc {
		bits[t>>6] |= 1 << (t & 63)
	}
	id := int32(len(l.accs))
	l.accs = append(l.accs, bits)
	l.accIDs[string(k)] = id
	return id
}

// accBits returns the terminal bitset of an accID.
func (l *lexer) accBits(id int32) []uint64 {
	l.mu.Lock()
	b := l.accs[id]
	l.mu.Unlock()
	return b
}

// step returns the state after byte b from d (dead if b cannot follow).
func (l *lexer) step(d *dstate, b byte) *dstate {
	if t := d.next[b].Load(); t != nil {
		return t
	}
	if !d.allows(b) {
		return l.dead
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := d.next[b].Load(); t != nil {
		return t
	}
	l.newGen()
	l.atStart, l.prev = false, int(b)
	for _, v := range d.core {
		x := &l.nfa.nodes[v]
		if x.kind == nByte && x.lo <= b && b <= x.hi {
			l.stack = append(l.stack, x.out)
		}
	}
	l.closure()
	t, keep := l.intern()
	if keep {
		// every byte that the same core nodes read (and that is a newline exactly when b is)
		// leads to the same state: fill the whole class at once
		lo, hi := d.byteClass(l.nfa, b)
		for c := lo; c <= hi; c++ {
			d.next[c].Store(t)
		}
	}
	return t
}

// byteClass returns the widest byte range around b whose bytes every byte node of d's core
// reads all or none of, and which holds a newline only if it is b (closures look at it).
func (d *dstate) byteClass(n *nfa, b byte) (lo, hi int) {
	lo, hi = 0, 255
	if b == '\n' {
		return int(b), int(b)
	} else if b < '\n' {
		hi = '\n' - 1
	} else {
		lo = '\n' + 1
	}
	for _, v := range d.core {
		x := &n.nodes[v]
		if x.kind != nByte {
			continue
		}
		switch {
		case x.hi < b:
			lo = max(lo, int(x.hi)+1)
		case x.lo > b:
			hi = min(hi, int(x.lo)-1)
		default:
			lo, hi = max(lo, int(x.lo)), min(hi, int(x.hi))
		}
	}
	return lo, hi
}

// start returns the state that begins any of the terminals in terms (sorted, distinct).
func (l *lexer) start(terms []int32) *dstate {
	k := make([]byte, 0, 4*len(terms))
	for _, v := range terms {
		k = append(k, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.starts[string(k)]; ok {
		return d
	}
	l.newGen()
	l.atStart, l.prev = true, -1
	for _, t := range terms {
		l.stack = append(l.stack, l.nfa.starts[t])
	}
	l.closure()
	// a start state's own matches are the empty match: the parser handles those (nullable
	// terminals), so they are left out here
	j := 0
	for _, v := range l.set {
		if l.nfa.nodes[v].kind != nMatch {
			l.set[j] = v
			j++
		}
	}
	l.set = l.set[:j]
	d, _ := l.intern()
	if len(l.starts) < 1<<16 {
		l.starts[string(k)] = d
	}
	return d
}

// termInfo reports whether terminal t matches the empty string and whether it matches anything.
func (l *lexer) termInfo(t int32) (nullable, productive bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.newGen()
	l.atStart, l.prev = true, -1
	l.stack = append(l.stack, l.nfa.starts[t])
	l.closure()
	for _, v := range l.set {
		if l.nfa.nodes[v].kind == nMatch {
			nullable = true
		}
	}
	return nullable, len(l.set) > 0
}
