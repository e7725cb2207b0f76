// This file finds counted runs of plain text in the lexer: a state inside a JSON string with
// a length bound (or any regex counting characters) is not a loop, but every printable ASCII
// byte (no quote, backslash or control byte) leads it to one same next state, and that one
// on, for as many bytes as the bound leaves. A mask walk allows a trie subtree of such bytes
// no deeper than that run at once, as it does below a state that loops.

package grammar

// textSucc returns the state that every byte of textGroups (and with utf8 every multi-byte
// UTF-8 character) leads d to, if they all lead to the same live state ending no terminal
// (dead otherwise); computed once per state.
func (l *lexer) textSucc(d *dstate, utf8 bool) *dstate {
	memo := &d.succ[0]
	if utf8 {
		memo = &d.succ[1]
	}
	if y := memo.Load(); y != nil {
		return y
	}
	y := l.textSucc1(d, utf8)
	memo.Store(y)
	return y
}

func (l *lexer) textSucc1(d *dstate, utf8 bool) *dstate {
	if d.accID >= 0 {
		return l.dead
	}
	var y *dstate
	for b := 0x20; b < 0x7f; b++ {
		if b == '"' || b == '\\' {
			continue
		}
		x := l.step(d, byte(b))
		if x == l.dead || x.accID >= 0 || (y != nil && x != y) {
			return l.dead
		}
		y = x
	}
	if utf8 && !l.utf8To(d, y) {
		return l.dead
	}
	return y
}

// textRun reports whether d can read any n bytes of textGroups (with utf8, also UTF-8
// characters), staying alive and ending no terminal.
func (l *lexer) textRun(d *dstate, n int, utf8 bool) bool {
	return int(l.runLen(d, utf8)) >= n
}

// runCap bounds the run lengths remembered: longer than any token.
const runCap = 1 << 12

// runLen returns how many textSucc steps from d stay alive (runCap for a state leading to
// itself; an underestimate only past runCap), computed once per state: the chain of states
// followed is remembered on the way back.
func (l *lexer) runLen(d *dstate, utf8 bool) int32 {
	u := 0
	if utf8 {
		u = 1
	}
	if v := d.runs[u].Load(); v > 0 {
		return v - 1
	}
	var chain []*dstate
	next := int32(-1) // run length of the state after the chain's last
	for x := d; ; {
		if v := x.runs[u].Load(); v > 0 {
			next = v - 1
			break
		}
		if len(chain) == runCap {
			break
		}
		chain = append(chain, x)
		y := l.textSucc(x, utf8)
		if y == l.dead {
			break
		}
		if y == x {
			next = runCap
			break
		}
		x = y
	}
	for i := len(chain) - 1; i >= 0; i-- {
		next = min(runCap, next+1)
		chain[i].runs[u].Store(next + 1)
	}
	return next
}
