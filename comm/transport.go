// The transport interface: how a group moves bytes between two of its ranks. Peers are group
// ranks. Every call either completes, or fails with a *peerError naming the rank, or fails
// because the group was aborted or its deadline passed.
package comm

import (
	"fmt"
	"time"
)

// transport moves data within one group. Calls to different peers may run concurrently;
// calls to one peer in one direction are sequential.
type transport interface {
	// send writes all of b to peer.
	send(peer int, b []byte) error
	// recv fills b from peer.
	recv(peer int, b []byte) error
	// recvReduce receives len(dst) float32 from peer and folds them into dst with op,
	// chunk by chunk as they arrive.
	recvReduce(peer int, dst []float32, op Op) error
	// setDeadline bounds every following call (the collective's timeout).
	setDeadline(t time.Time)
	// abort unblocks every call in progress; later calls fail.
	abort()
	close() error
}

// peerError is a failure talking to one rank (world rank).
type peerError struct {
	rank    int
	dir     string // "send to" or "receive from"
	err     error
	timeout bool
}

func (e *peerError) Error() string {
	return fmt.Sprintf("%s rank %d: %v", e.dir, e.rank, e.err)
}

func (e *peerError) Unwrap() error { return e.err }
