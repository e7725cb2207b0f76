// Rendezvous: Init starts rank 0's store, opens this process's listener, registers its address
// and host in the store, reads everyone else's, and builds the world group. The listener then
// accepts mesh connections (hello frames) and answers status queries for the timeout report.
package comm

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// proc is the per-process state every group shares.
type proc struct {
	env     Env
	opts    Options
	log     *slog.Logger
	metrics *metrics
	store   *storeClient
	server  *storeServer // rank 0 only
	ln      net.Listener
	addrs   []string // listener address of every world rank
	hosts   []string // hostname of every world rank
	jobID   string

	mu       sync.Mutex
	pending  map[string]chan net.Conn // "<gid>/<kind>/<from>" -> accepted connection
	groups   map[string]*Group
	nextSub  int
	lnClosed chan struct{}
	wg       sync.WaitGroup
	// failed is set when any group of this process failed (a peer died, hung or aborted): the
	// world group's Close then does not wait for every rank's goodbye, which a dead rank never
	// sends.
	failed atomic.Bool
}

// Init joins the job described by env and returns the world group. Every rank calls it; it
// returns when all WORLD_SIZE ranks are connected. Metrics go to reg (nil: none).
func Init(env Env, opts Options, log *slog.Logger, reg prometheus.Registerer) (*Group, error) {
	if err := env.validate(); err != nil {
		return nil, err
	}
	opts, err := opts.withEnv()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	p := &proc{env: env, opts: opts, log: log.With("rank", env.Rank), metrics: m,
		pending: map[string]chan net.Conn{}, groups: map[string]*Group{}, lnClosed: make(chan struct{})}
	if err := p.rendezvous(); err != nil {
		p.shutdown()
		return nil, err
	}
	ranks := make([]int, env.WorldSize)
	for i := range ranks {
		ranks[i] = i
	}
	g, err := p.newGroup("w", ranks, env.Rank)
	if err != nil {
		p.shutdown()
		return nil, err
	}
	g.ownsProc = true
	return g, nil
}

func (p *proc) rendezvous() error {
	st := p.opts.SetupTimeout
	masterAddr := net.JoinHostPort(p.env.MasterAddr, strconv.Itoa(p.env.MasterPort))
	if p.env.Rank == 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p.env.MasterPort)))
		if err != nil {
			return fmt.Errorf("comm: rank 0 store: %w", err)
		}
		p.server = newStoreServer(ln, p.log)
		// The port actually bound (MASTER_PORT may be 0 for a one-rank job), reached over
		// MASTER_ADDR when that is one of this host's addresses, so that the address rank 0
		// advertises below is one the other hosts reach, else over loopback.
		masterAddr = net.JoinHostPort(selfHost(p.env.MasterAddr), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	sc, err := dialStore(masterAddr, st)
	if err != nil {
		return err
	}
	p.store = sc
	// Advertise the address this host uses to reach the master (loopback when local).
	ip := sc.c.LocalAddr().(*net.TCPAddr).IP
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return fmt.Errorf("comm: listener: %w", err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept()
	if p.env.Rank == 0 {
		var id [8]byte
		rand.Read(id[:])
		if err := sc.set("job", []byte(hex.EncodeToString(id[:])), st); err != nil {
			return err
		}
	}
	host, _ := os.Hostname()
	r := strconv.Itoa(p.env.Rank)
	if err := sc.set("addr/"+r, []byte(ln.Addr().String()), st); err != nil {
		return err
	}
	if err := sc.set("host/"+r, []byte(host), st); err != nil {
		return err
	}
	job, err := sc.get("job", st)
	if err != nil {
		return err
	}
	p.jobID = string(job)
	p.addrs = make([]string, p.env.WorldSize)
	p.hosts = make([]string, p.env.WorldSize)
	for i := range p.addrs {
		a, err := sc.get("addr/"+strconv.Itoa(i), st)
		if err != nil {
			return fmt.Errorf("comm: waiting for rank %d to register: %w", i, err)
		}
		h, err := sc.get("host/"+strconv.Itoa(i), st)
		if err != nil {
			return err
		}
		p.addrs[i], p.hosts[i] = string(a), string(h)
	}
	p.log.Debug("ccl rendezvous done", "world", p.env.WorldSize, "addr", ln.Addr().String())
	return nil
}

// accept serves the listener: hello frames hand a mesh connection to the group setting up,
// status frames get this process's status in that group.
func (p *proc) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			f, err := readFrame(c)
			if err != nil {
				c.Close()
				return
			}
			switch f.typ {
			case frameHello:
				c.SetReadDeadline(time.Time{})
				p.pendingChan(f.key + "/" + string(f.val)) <- c
			case frameStatus:
				p.mu.Lock()
				g := p.groups[f.key]
				p.mu.Unlock()
				var v []byte
				if g != nil {
					v = g.status.load().encode()
				}
				c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				writeFrame(c, frame{typ: frameValue, val: v})
				c.Close()
			default:
				c.Close()
			}
		}()
	}
}

func (p *proc) pendingChan(key string) chan net.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.pending[key]
	if !ok {
		ch = make(chan net.Conn, 1)
		p.pending[key] = ch
	}
	return ch
}

// connect returns one connection of the given kind to every other member (nil at me): the
// lower group rank dials, the higher accepts.
func (p *proc) connect(gid, kind string, ranks []int, me int, deadline time.Time) ([]net.Conn, error) {
	conns := make([]net.Conn, len(ranks))
	fail := func(err error) ([]net.Conn, error) {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	for j := range ranks {
		if j >= me {
			continue
		}
		c, err := net.DialTimeout("tcp", p.addrs[ranks[j]], time.Until(deadline))
		if err != nil {
			return fail(fmt.Errorf("comm: connecting to rank %d: %w", ranks[j], err))
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		conns[j] = c
		if err := writeFrame(c, frame{typ: frameHello, key: gid + "/" + kind, val: []byte(strconv.Itoa(me))}); err != nil {
			return fail(fmt.Errorf("comm: hello to rank %d: %w", ranks[j], err))
		}
	}
	for j := me + 1; j < len(ranks); j++ {
		key := gid + "/" + kind + "/" + strconv.Itoa(j)
		select {
		case c := <-p.pendingChan(key):
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetNoDelay(true)
			}
			conns[j] = c
			p.mu.Lock()
			delete(p.pending, key)
			p.mu.Unlock()
		case <-time.After(time.Until(deadline)):
			return fail(fmt.Errorf("comm: rank %d did not connect within the setup timeout", ranks[j]))
		}
	}
	return conns, nil
}

func (p *proc) shutdown() {
	if p.ln != nil {
		p.ln.Close()
	}
	if p.store != nil {
		p.store.close()
	}
	if p.server != nil {
		p.server.close()
	}
	p.wg.Wait()
	p.mu.Lock()
	for k, ch := range p.pending {
		select {
		case c := <-ch:
			c.Close()
		default:
		}
		delete(p.pending, k)
	}
	p.mu.Unlock()
}

// selfHost is host when it names an address of one of this host's interfaces (rank 0 then
// dials its own store there and advertises it), else "127.0.0.1".
func selfHost(host string) string {
	ips, err := net.LookupIP(host)
	if err != nil {
		return "127.0.0.1"
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return ip.String()
			}
		}
	}
	return "127.0.0.1"
}
