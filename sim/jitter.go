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

package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Overhead is one measured request's time outside the engine: added to its TTFT, and to each
// of its inter-token gaps. Either may be negative (a request that went faster than the
// simulation's median one); the sums are kept at zero or more.
type Overhead struct {
	TTFT, TPOT time.Duration
}

// checkOverheads validates o's overhead options.
func checkOverheads(o *Options) error {
	if len(o.Overheads) == 0 {
		return nil
	}
	if o.RequestOverhead != 0 {
		return errors.New("sim: a constant request overhead and measured overheads together: give one")
	}
	for i, v := range o.Overheads {
		if v.TTFT < -time.Hour || v.TTFT > time.Hour || v.TPOT < -time.Hour || v.TPOT > time.Hour {
			return fmt.Errorf("sim: measured overhead %d (TTFT %v, TPOT %v) is not a request's overhead", i, v.TTFT, v.TPOT)
		}
	}
	return nil
}

// applyOverheads adds a drawn Overhead to every successful request of out (whose ITLs are
// kept), in request order, rebuilds the gap histogram, and moves out.End to the last
// request's new end.
func applyOverheads(out *Outcome, ovs []Overhead, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc908))
	applyEach(out, func(int) Overhead { return ovs[rng.IntN(len(ovs))] })
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
// two Go durations ("4.2ms 0.03ms"; negative allowed); blank lines and lines starting with #
// are skipped. scripts/simulate-fidelity.sh writes them from a calibration run.
func ParseOverheads(text string) ([]Overhead, error) {
	var ovs []Overhead
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("overheads line %d: %q: want two durations, TTFT and TPOT (e.g. 4.2ms 0.03ms)", n+1, line)
		}
		var v [2]time.Duration
		for k, s := range f {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("overheads line %d: %v", n+1, err)
			}
			v[k] = d
		}
		ovs = append(ovs, Overhead{TTFT: v[0], TPOT: v[1]})
	}
	if len(ovs) == 0 {
		return nil, errors.New("overheads: no lines (want one per measured request: TTFT TPOT)")
	}
	o := Options{Overheads: ovs}
	return ovs, checkOverheads(&o)
}
