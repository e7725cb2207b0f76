// Binary trees rooted at any rank (relative rank v = r - root; children 2v+1, 2v+2): reduce
// towards the root and broadcast away from it, both pipelined chunk by chunk so a chunk moves
// down (or up) the next level while the following one is still arriving.
package comm

func (g *Group) treeLinks(root int) (parent int, children []int) {
	n := len(g.ranks)
	v := mod(g.rank-root, n)
	parent = -1
	if v > 0 {
		parent = mod((v-1)/2+root, n)
	}
	for _, c := range []int{2*v + 1, 2*v + 2} {
		if c < n {
			children = append(children, mod(c+root, n))
		}
	}
	return parent, children
}

// treeReduce folds every rank's x ([count] float32) into root's x. On other ranks x is left as
// it was (inner nodes reduce into a scratch copy).
func (g *Group) treeReduce(x []float32, root int, op Op) error {
	parent, children := g.treeLinks(root)
	acc := x
	if parent >= 0 && len(children) > 0 {
		acc = g.scratchF32(len(x))
		copy(acc, x)
	}
	chunk := g.opts.ChunkBytes / 4
	for lo := 0; lo < len(x); lo += chunk {
		hi := min(lo+chunk, len(x))
		for _, c := range children {
			if err := g.tr.recvReduce(c, acc[lo:hi], op); err != nil {
				return err
			}
		}
		if parent >= 0 {
			if err := g.tr.send(parent, f32bytes(acc[lo:hi])); err != nil {
				return err
			}
		}
	}
	return nil
}

// treeBroadcast copies root's buf to every rank's buf.
func (g *Group) treeBroadcast(buf []byte, root int) error {
	parent, children := g.treeLinks(root)
	chunk := g.opts.ChunkBytes
	for lo := 0; lo < len(buf); lo += chunk {
		b := buf[lo:min(lo+chunk, len(buf))]
		if parent >= 0 {
			if err := g.tr.recv(parent, b); err != nil {
				return err
			}
		}
		for _, c := range children {
			if err := g.tr.send(c, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratchF32 returns the group's reusable scratch of n float32 (worker goroutine only).
func (g *Group) scratchF32(n int) []float32 {
	if cap(g.scratch) < n {
		g.scratch = make([]float32, n)
	}
	return g.scratch[:n]
}
