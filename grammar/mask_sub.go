// This file remembers the walks of large trie subtrees from the states walks reach there.
// Object keys make walks costly: each key position is a new lexer state (the literal keys
// still to come, and the regex for any other key), so each needs a whole-trie walk of its own;
// but once a token's bytes leave every literal key, the walk goes on in the other-key regex's
// body, a state every key position reaches at the same trie nodes (and so for a string with a
// pattern, once the pattern is met). The walk below such a node is kept per (state, node) in
// the Grammar's vcache and added to later walks as it stands.

package grammar

// walkOut collects a walk: token ranges (indexes into trie.tokList, in trie order) and the
// nodes where terminals end, grouped by accID.
type walkOut struct {
	rng    [][2]int32
	groups []lexGroup
	accIDs []int32
	group  map[int32]int
}

// subEntry is a remembered walk of one subtree.
type subEntry struct {
	rng    [][2]int32
	groups []lexGroup // accKey unset
	accIDs []int32
}

type subKey struct {
	d    *dstate
	node int32
}

// subMinNodes is the least subtree worth remembering.
const subMinNodes = 256

// allow adds tokList[a:b] (walks go in trie order: ranges come sorted).
func (o *walkOut) allow(a, b int32) {
	if a == b {
		return
	}
	if n := len(o.rng); n > 0 && o.rng[n-1][1] == a {
		o.rng[n-1][1] = b
		return
	}
	o.rng = append(o.rng, [2]int32{a, b})
}

func (o *walkOut) groupOf(acc int32) *lexGroup {
	gi, ok := o.group[acc]
	if !ok {
		gi = len(o.groups)
		o.group[acc] = gi
		o.groups = append(o.groups, lexGroup{})
		o.accIDs = append(o.accIDs, acc)
	}
	return &o.groups[gi]
}

// add appends a remembered walk (of a subtree after everything added so far).
func (o *walkOut) add(se *subEntry) {
	for _, r := range se.rng {
		o.allow(r[0], r[1])
	}
	for i := range se.groups {
		g := o.groupOf(se.accIDs[i])
		g.nodes = append(g.nodes, se.groups[i].nodes...)
		g.bulk = append(g.bulk, se.groups[i].bulk...)
	}
}

func (se *subEntry) size() int {
	n := 8*len(se.rng) + 64
	for _, g := range se.groups {
		n += 4*len(g.nodes) + 4*len(g.bulk) + 48
	}
	return n
}

// sub returns the walk of node's subtree (below node) from d.
func (vc *vcache) sub(d *dstate, node int32) *subEntry {
	key := subKey{d, node}
	vc.mu.Lock()
	se := vc.subs[key]
	vc.mu.Unlock()
	if se != nil {
		return se
	}
	out := walkOut{group: map[int32]int{}}
	vc.walkInto(d, []int32{node}, nil, &walkScratch{}, &out)
	se = &subEntry{rng: out.rng, groups: out.groups, accIDs: out.accIDs}
	vc.mu.Lock()
	if len(vc.subs) < vcacheMaxEntries && vc.bytes+se.size() <= vc.max {
		if vc.subs == nil {
			vc.subs = map[subKey]*subEntry{}
		}
		vc.subs[key] = se
		vc.bytes += se.size()
	}
	vc.mu.Unlock()
	return se
}
