// Routing policies: pure state machines that choose one backend from the candidates of a request.
// They do no I/O, read no clock and take no locks; the router serializes calls to Pick and
// Forget. Their inputs are explicit (Input from the request, Candidate load from the router's
// in-flight counts and the replicas' scraped metrics), so tests drive them with tables.

package router

import (
	"fmt"
	"math"
)

// Candidate is one backend a request may go to, with its current load.
type Candidate struct {
	URL      string
	Inflight int     // requests the router has in flight to it now
	Running  float64 // scraped vllm:num_requests_running
	Waiting  float64 // scraped vllm:num_requests_waiting
	KVUsage  float64 // scraped vllm:kv_cache_usage_perc (0..1)
}

// Input is what a policy may know of a request.
type Input struct {
	SessionKey string // X-Session-ID header, else the body's "user" field ("" = none)
	Prompt     string // completions: the prompt; chat: the rendered messages ("" = not parsed)
	Model      string // the body's "model" ("" = none, or not parsed: no backend lists models)
}

// Decision is a policy's choice.
type Decision struct {
	Index  int    // into the candidates
	Reason string // the routing_decisions_total reason label

	PrefixLookup  bool // the prefix table was consulted
	PrefixHit     bool // and a cached prefix decided the route
	MatchedBlocks int  // prefix blocks matched on the chosen backend
}

// Policy chooses backends. Pick gets at least one candidate, sorted by URL, and returns the
// index of one. Forget drops any state kept for a backend that left the set.
type Policy interface {
	Name() string
	Pick(in Input, cands []Candidate) Decision
	Forget(url string)
}

// Policy names.
const (
	RoundRobin = "round-robin"
	LeastLoad  = "least-load"
	Session    = "session"
	Prefix     = "prefix"
	PD         = "pd" // disaggregated prefill/decode (pd.go); least-load when it falls back
)

// Decision reasons.
const (
	ReasonRoundRobin     = "round_robin"
	ReasonLeastLoad      = "least_load"
	ReasonAffinity       = "affinity"
	ReasonPrefixHit      = "prefix_hit"
	ReasonPrefixOverload = "prefix_overload" // a cached prefix lost to load balance
	ReasonFallback       = "fallback"        // the policy's key was missing
)

// NewPolicy returns the policy called name with its default parameters.
func NewPolicy(name string) (Policy, error) {
	switch name {
	case RoundRobin, "":
		return &roundRobin{}, nil
	case LeastLoad:
		return &leastLoad{}, nil
	case Session:
		return &sessionAffinity{}, nil
	case Prefix:
		return NewPrefixPolicy(DefaultPrefixConfig()), nil
	case PD:
		return &pdPolicy{}, nil
	}
	return nil, fmt.Errorf("router: unknown policy %q (want %s, %s, %s, %s or %s)", name, RoundRobin, LeastLoad, Session, Prefix, PD)
}

// needs tells which request fields a policy reads, so the router parses the body only then.
func needs(p Policy) (session, prompt bool) {
	switch p.Name() {
	case Session:
		return true, false
	case Prefix, PD:
		return false, true
	}
	return false, false
}

// roundRobin takes the candidates in turn.
type roundRobin struct{ next uint64 }

func (p *roundRobin) Name() string  { return RoundRobin }
func (p *roundRobin) Forget(string) {}
func (p *roundRobin) Pick(_ Input, cands []Candidate) Decision {
	i := int(p.next % uint64(len(cands)))
	p.next++
	return Decision{Index: i, Reason: ReasonRoundRobin}
}

// Score is a candidate's load: the larger of the router's own in-flight count (fresh) and the
// replica's running+waiting (scraped, so stale but counting other clients' requests), plus the
// waiting requests again (a queue means the replica is saturated) and twice the KV-cache usage
// (a full cache means preemptions soon).
func Score(c Candidate) float64 {
	return math.Max(float64(c.Inflight), c.Running+c.Waiting) + c.Waiting + 2*c.KVUsage
}

// leastLoad takes the candidate of lowest Score; ties go round in turn, so an idle cluster
// still spreads requests.
type leastLoad struct{ next uint64 }

func (p *leastLoad) Name() string  { return LeastLoad }
func (p *leastLoad) Forget(string) {}
func (p *leastLoad) Pick(_ Input, cands []Candidate) Decision {
	i := leastLoaded(cands, p.next)
	p.next++
	return Decision{Index: i, Reason: ReasonLeastLoad}
}

// leastLoaded is the index of the lowest-score candidate, scanning from start (mod len).
func leastLoaded(cands []Candidate, start uint64) int {
	n := len(cands)
	best, bestScore := -1, math.Inf(1)
	for k := range n {
		i := int((start + uint64(k)) % uint64(n))
		if s := Score(cands[i]); s < bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// sessionAffinity sends every request of a session to the same backend by rendezvous
// (highest-random-weight) hashing: each candidate gets the weight hash(key, URL) and the
// highest wins. Adding a backend moves only the sessions it now wins (1/n of them); removing
// one moves only its own sessions. Requests without a key go to the least-loaded backend.
type sessionAffinity struct{ next uint64 }

func (p *sessionAffinity) Name() string  { return Session }
func (p *sessionAffinity) Forget(string) {}
func (p *sessionAffinity) Pick(in Input, cands []Candidate) Decision {
	if in.SessionKey == "" {
		i := leastLoaded(cands, p.next)
		p.next++
		return Decision{Index: i, Reason: ReasonFallback}
	}
	k := hashString(fnvOffset, in.SessionKey)
	best, bestW := 0, uint64(0)
	for i, c := range cands {
		if w := mix64(hashString(k, c.URL)); i == 0 || w > bestW {
			best, bestW = i, w
		}
	}
	return Decision{Index: best, Reason: ReasonAffinity}
}

// FNV-1a, 64 bits, written out so hashing a string allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix64 is the splitmix64 finalizer: FNV's high bits are weak for short keys.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
