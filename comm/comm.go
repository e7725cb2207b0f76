// Package comm is llmcloud's collective communication library: process groups over TCP or
// shared memory, set up from torchrun-style environment variables, with allreduce (ring, tree,
// recursive halving-doubling), broadcast, reduce, reduce-scatter, all-gather, gather, scatter,
// all-to-all, send/recv and barrier, async handles, sub-groups, and a timeout on every
// collective that reports where each rank is. See docs/comm.md.
//
// This file holds the public vocabulary: reduction ops, algorithms, transports and options.
package comm

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Op is a reduction applied element-wise to float32 buffers.
type Op int

const (
	Sum Op = iota
	Max
	Min
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Algo selects the allreduce algorithm.
type Algo int

const (
	AlgoAuto Algo = iota // chosen per call by message size and world size (see chooseAlgo)
	AlgoRing             // reduce-scatter + all-gather around a ring: bandwidth-optimal
	AlgoTree             // binary-tree reduce to rank 0, then binary-tree broadcast
	AlgoRHD              // recursive halving (reduce-scatter) + recursive doubling (all-gather)
)

var algoNames = map[Algo]string{AlgoAuto: "auto", AlgoRing: "ring", AlgoTree: "tree", AlgoRHD: "rhd"}

func (a Algo) String() string {
	if s, ok := algoNames[a]; ok {
		return s
	}
	return fmt.Sprintf("algo(%d)", int(a))
}

// ParseAlgo reads "auto", "ring", "tree" or "rhd".
func ParseAlgo(s string) (Algo, error) {
	for a, n := range algoNames {
		if strings.EqualFold(s, n) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("comm: unknown algorithm %q (want auto, ring, tree or rhd)", s)
}

// Transport names how a group moves bytes between its ranks.
type Transport string

const (
	TCP Transport = "tcp" // one TCP connection per pair of ranks (any hosts)
	SHM Transport = "shm" // /dev/shm ring buffers per ordered pair (all ranks on one host)
)

// ParseTransport reads "tcp" or "shm".
func ParseTransport(s string) (Transport, error) {
	switch Transport(strings.ToLower(s)) {
	case TCP:
		return TCP, nil
	case SHM:
		return SHM, nil
	}
	return "", fmt.Errorf("comm: unknown transport %q (want tcp or shm)", s)
}

// Options configure a process group. DefaultOptions gives a complete set.
type Options struct {
	// Timeout bounds every collective; on expiry the error says where every rank is.
	Timeout time.Duration
	// Algo forces an allreduce algorithm (AlgoAuto chooses). LLMCLOUD_CCL_ALGO overrides it.
	Algo Algo
	// Transport is TCP or SHM. LLMCLOUD_CCL_TRANSPORT overrides it.
	Transport Transport
	// ChunkBytes is the pipelining unit: received data is reduced chunk by chunk while the
	// rest is still in flight.
	ChunkBytes int
	// ShmSlotBytes and ShmSlots size each shared-memory ring (one per ordered pair of ranks).
	ShmSlotBytes int
	ShmSlots     int
	// SetupTimeout bounds rendezvous and connection setup.
	SetupTimeout time.Duration
}

// DefaultOptions returns the defaults: 5 minute timeout, automatic algorithm, TCP.
func DefaultOptions() Options {
	return Options{
		Timeout:      5 * time.Minute,
		Algo:         AlgoAuto,
		Transport:    TCP,
		ChunkBytes:   256 << 10,
		ShmSlotBytes: 256 << 10,
		ShmSlots:     8,
		SetupTimeout: 2 * time.Minute,
	}
}

// withEnv applies LLMCLOUD_CCL_ALGO and LLMCLOUD_CCL_TRANSPORT, and fills zero fields.
func (o Options) withEnv() (Options, error) {
	d := DefaultOptions()
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Transport == "" {
		o.Transport = d.Transport
	}
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = d.ChunkBytes
	}
	o.ChunkBytes = (o.ChunkBytes + 3) &^ 3
	if o.ShmSlotBytes <= 0 {
		o.ShmSlotBytes = d.ShmSlotBytes
	}
	o.ShmSlotBytes = (o.ShmSlotBytes + 63) &^ 63
	if o.ShmSlots <= 0 {
		o.ShmSlots = d.ShmSlots
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = d.SetupTimeout
	}
	if s := os.Getenv("LLMCLOUD_CCL_ALGO"); s != "" {
		a, err := ParseAlgo(s)
		if err != nil {
			return o, fmt.Errorf("LLMCLOUD_CCL_ALGO: %w", err)
		}
		o.Algo = a
	}
	if s := os.Getenv("LLMCLOUD_CCL_TRANSPORT"); s != "" {
		t, err := ParseTransport(s)
		if err != nil {
			return o, fmt.Errorf("LLMCLOUD_CCL_TRANSPORT: %w", err)
		}
		o.Transport = t
	}
	return o, nil
}
