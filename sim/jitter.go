// Per-request overheads drawn from a measured distribution (Options.Overheads). A constant
// RequestOverhead gives every request the same time outside the engine, so the simulated
// TTFTs of lone requests are one value where a real cloud's vary: measured one request at a
// time against `up --replicas 3` on this host (docs/simulate.md), the real TTFT's p99 was
// twice its median with nothing else running. The variation comes from outside the profiled
// step (the client, the router, HTTP, the Go runtime, other processes), so it is measured the
// same way as the constant: per request, the real TTFT and TPOT minus the simulated ones of
// the same requests run one at a time; the simulation then gives each request one of those
// pairs, drawn with a seeded generator (the same draw for the same seed and requests).
//
// Like RequestOverhead the draws are added to each request's times after its engine schedule
// is simulated: the time is spent outside the engine, so it does not occupy a replica. A
// request's TPOT draw is added to each of its inter-token gaps.
//
// Measured requests that hit the prefix cache and those that missed it are not alike (on the
// Zen 5 VM the misses' real-minus-simulated TTFT was 9.0 ms at the median, the hits' 7.1), and
// a calibration's lone requests need not hit it as often as a measured point's. When every
// measured overhead says whether its request hit (Overhead.Cache), a simulated request draws
// from those of its own outcome: the prompt tokens the prefix cache supplied when it was first
// scheduled (Outcome.Cached), none being a miss.
//
// The TPOT part holds the client's view of a lone stream: on the Zen 5 VM bench saw a 32-token
// decode 21-29% faster than the replicas' own decode time (the first token reached it late,
// the rest bunched), but a request that shared the client with another stream in flight saw
// about the server's pace (docs/simulate-fidelity.md, "Ten rounds of 40 s"). The calibration's
// requests are lone, so their median TPOT part is taken as that view and the spread around it
// as the host's jitter: a simulated request the client serves alone gets its drawn TPOT part,
// one whose life (its arrival or send to its engine end) overlaps another's the draw less the
// median (the server's pace, the jitter kept). The TTFT part is drawn for both.

package sim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Overhead is one measured request's time outside the engine: added to its TTFT, and to each
// of its inter-token gaps. Either may be negative (a request that went faster than the
// simulation's median one); the sums are kept at zero or more. Cache says whether the
// measured request hit the prefix cache (CacheUnknown: not said).
type Overhead struct {
	TTFT, TPOT time.Duration
	Cache      CacheOutcome
}

// CacheOutcome is whether a request's prompt found any of its tokens in the prefix cache.
type CacheOutcome uint8

const (
	CacheUnknown CacheOutcome = iota
	CacheMiss
	CacheHit
)

// checkOverheads validates o's overhead options.
func checkOverheads(o *Options) error {
	if len(o.Overheads) == 0 {
		return nil
	}
	if o.RequestOverhead != 0 {
		return errors.New("sim: a constant request overhead and measured overheads together: give one")
	}
	known := 0
	for i, v := range o.Overheads {
		if v.TTFT < -time.Hour || v.TTFT > time.Hour || v.TPOT < -time.Hour || v.TPOT > time.Hour {
			return fmt.Errorf("sim: measured overhead %d (TTFT %v, TPOT %v) is not a request's overhead", i, v.TTFT, v.TPOT)
		}
		if v.Cache > CacheHit {
			return fmt.Errorf("sim: measured overhead %d: cache outcome %d", i, v.Cache)
		}
		if v.Cache != CacheUnknown {
			known++
		}
	}
	if known != 0 && known != len(o.Overheads) {
		return fmt.Errorf("sim: %d of %d measured overheads say whether their request hit the prefix cache: give it for all or none", known, len(o.Overheads))
	}
	return nil
}

// drawer draws each request's overhead: from the measured requests of its own prefix-cache
// outcome when the overheads give theirs (from all of them if its outcome has none), else
// from all. Request i's draw depends only on the seed, i and its outcome, not on the order of
// the draws, so that the closed loop (drawing as requests end) and the open one agree.
type drawer struct {
	all, hit, miss []Overhead
	seed           uint64
	// lone is the measured requests' median TPOT part: the client's view of a lone stream
	// (jitter.go's header), taken off the draws of requests that shared the client.
	lone time.Duration
}

func newDrawer(ovs []Overhead, seed uint64) *drawer {
	d := &drawer{all: ovs, seed: seed}
	tp := make([]time.Duration, len(ovs))
	for i, v := range ovs {
		tp[i] = v.TPOT
	}
	slices.Sort(tp)
	d.lone = tp[len(tp)/2]
	for _, v := range ovs {
		switch v.Cache {
		case CacheHit:
			d.hit = append(d.hit, v)
		case CacheMiss:
			d.miss = append(d.miss, v)
		}
	}
	return d
}

// draw is request i's overhead; cached is the prompt tokens the prefix cache supplied it.
func (d *drawer) draw(i int, cached int32) Overhead {
	pool := d.all
	if cached > 0 && len(d.hit) > 0 {
		pool = d.hit
	} else if cached <= 0 && len(d.miss) > 0 {
		pool = d.miss
	}
	// splitmix64 of (seed, i): a uniform index whatever order requests are drawn in.
	z := d.seed*0x9e3779b97f4a7c15 + uint64(i+1)*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	hi, _ := bits.Mul64(z, uint64(len(pool))) // z scaled to [0, len): Lemire's reduction
	return pool[hi]
}

// applyOverheads adds a drawn Overhead to every successful request of out (whose ITLs are
// kept), in request order, rebuilds the gap histogram, and moves out.End to the last
// request's new end.
func applyOverheads(out *Outcome, ovs []Overhead, seed uint64) {
	d := newDrawer(ovs, seed)
	alone := servedAlone(out)
	applyEach(out, func(i int) Overhead {
		v := d.draw(i, out.Cached[i])
		if !alone[i] {
			v.TPOT -= d.lone
		}
		return v
	})
}

// servedAlone reports for each successful request of out (in arrival order, as Simulate takes
// them) whether no other successful request was in flight at any time between its arrival and
// its end: every earlier one ended by its arrival, and the next one arrived at its end or later.
func servedAlone(out *Outcome) []bool {
	n := len(out.Requests)
	alone := make([]bool, n)
	end := func(i int) int64 { return out.Requests[i].At + out.E2E[i] }
	latest := int64(math.MinInt64) // the latest end of the requests before i
	for i := range n {
		if out.Errors[i] != "" {
			continue
		}
		alone[i] = latest <= out.Requests[i].At
		latest = max(latest, end(i))
	}
	next := int64(math.MaxInt64) // the arrival of the first request after i
	for i := n - 1; i >= 0; i-- {
		if out.Errors[i] != "" {
			continue
		}
		alone[i] = alone[i] && next >= end(i)
		next = out.Requests[i].At
	}
	return alone
}

// applyEach is applyOverheads with request i's overhead given by at(i), called once for each
// successful request in order.
func applyEach(out *Outcome, at func(i int) Overhead) {
	clear(out.ITLHist)
	var end int64
	for i := range out.Requests {
		if out.Errors[i] != "" {
			continue
		}
		v := at(i)
		ttft := max(out.TTFT[i]+int64(v.TTFT), 0)
		e2e := ttft
		for k, g := range out.ITLs[i] {
			g = max(g+int64(v.TPOT), 0)
			out.ITLs[i][k] = g
			out.ITLHist[g]++
			e2e += g
		}
		out.TTFT[i], out.E2E[i] = ttft, e2e
		end = max(end, out.Requests[i].At+e2e)
	}
	out.End = max(out.End, end)
}

// ParseOverheads reads measured overheads, one request per line: its TTFT and TPOT parts as
// two Go durations ("4.2ms 0.03ms"; negative allowed), and optionally, on every line or on
// none, the prompt tokens the prefix cache supplied that request ("4.2ms 0.03ms 256"; 0: a
// miss); blank lines and lines starting with # are skipped. scripts/simulate-fidelity.sh
// writes them from a calibration run.
func ParseOverheads(text string) ([]Overhead, error) {
	var ovs []Overhead
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 && len(f) != 3 {
			return nil, fmt.Errorf("overheads line %d: %q: want two durations, TTFT and TPOT, and optionally the prompt tokens the prefix cache supplied (e.g. 4.2ms 0.03ms 256)", n+1, line)
		}
		var v [2]time.Duration
		for k, s := range f[:2] {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("overheads line %d: %v", n+1, err)
			}
			v[k] = d
		}
		ov := Overhead{TTFT: v[0], TPOT: v[1]}
		if len(f) == 3 {
			c, err := strconv.Atoi(f[2])
			if err != nil || c < 0 {
				return nil, fmt.Errorf("overheads line %d: %q: the cached prompt tokens must be a count (0 or more)", n+1, f[2])
			}
			ov.Cache = CacheMiss
			if c > 0 {
				ov.Cache = CacheHit
			}
		}
		ovs = append(ovs, ov)
	}
	if len(ovs) == 0 {
		return nil, errors.New("overheads: no lines (want one per measured request: TTFT TPOT)")
	}
	o := Options{Overheads: ovs}
	return ovs, checkOverheads(&o)
}
