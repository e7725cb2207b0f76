// The prefix-aware policy. A prompt is cut into fixed-size blocks of bytes and each block gets a
// chained hash (the hash of the block and of every block before it), as a replica's prefix cache
// keys its KV blocks. For each backend the policy keeps an LRU table of the block hashes it has
// routed there: an approximation of what that replica has cached. A request goes to the backend
// matching the longest run of its leading blocks, unless that backend's load Score exceeds the
// least-loaded candidate's by more than LoadThreshold; then cache reuse loses to balance, as in
// the Gateway API Inference Extension's prefix scorer and SGLang's cache-aware router. The
// chosen backend's table then learns all the request's blocks.

package router

// PrefixConfig holds the prefix policy's parameters.
type PrefixConfig struct {
	BlockSizeBytes  int     // bytes of prompt text per hashed block
	MaxBlocks       int     // leading blocks hashed at most
	BlocksPerServer int     // LRU capacity of each backend's table
	LoadThreshold   float64 // Score margin over the least-loaded candidate that a prefix match may cost
}

// DefaultPrefixConfig: 64-byte blocks, up to 256 of them (16 KiB of prompt), 32768 blocks
// remembered per backend, a load margin of 8 (about 8 queued requests).
func DefaultPrefixConfig() PrefixConfig {
	return PrefixConfig{BlockSizeBytes: 64, MaxBlocks: 256, BlocksPerServer: 32768, LoadThreshold: 8}
}

type prefixPolicy struct {
	cfg     PrefixConfig
	tables  map[string]*blockLRU // by backend URL
	hashes  []uint64             // scratch
	matched []int                // scratch, per candidate
	next    uint64
}

// NewPrefixPolicy returns a prefix-aware policy with cfg (zero fields take the defaults).
func NewPrefixPolicy(cfg PrefixConfig) Policy {
	d := DefaultPrefixConfig()
	if cfg.BlockSizeBytes <= 0 {
		cfg.BlockSizeBytes = d.BlockSizeBytes
	}
	if cfg.MaxBlocks <= 0 {
		cfg.MaxBlocks = d.MaxBlocks
	}
	if cfg.BlocksPerServer <= 0 {
		cfg.BlocksPerServer = d.BlocksPerServer
	}
	if cfg.LoadThreshold <= 0 {
		cfg.LoadThreshold = d.LoadThreshold
	}
	return &prefixPolicy{cfg: cfg, tables: map[string]*blockLRU{}}
}

func (p *prefixPolicy) Name() string         { return Prefix }
func (p *prefixPolicy) Forget(url string)    { delete(p.tables, url) }
func (p *prefixPolicy) Config() PrefixConfig { return p.cfg }

// BlockHashes appends to dst the chained hashes of the full blocks of prompt (at most
// maxBlocks of them): h[i] = mix(FNV-1a(h[i-1], block i)). A partial last block is not hashed,
// as a prefix cache only shares full blocks.
func BlockHashes(dst []uint64, prompt string, blockSizeBytes, maxBlocks int) []uint64 {
	h := uint64(fnvOffset)
	for i := 0; i+blockSizeBytes <= len(prompt) && len(dst) < maxBlocks; i += blockSizeBytes {
		h = mix64(hashString(h, prompt[i:i+blockSizeBytes]))
		dst = append(dst, h)
	}
	return dst
}

func (p *prefixPolicy) Pick(in Input, cands []Candidate) Decision {
	p.hashes = BlockHashes(p.hashes[:0], in.Prompt, p.cfg.BlockSizeBytes, p.cfg.MaxBlocks)
	start := p.next
	p.next++
	least := leastLoaded(cands, start)
	if len(p.hashes) == 0 {
		return Decision{Index: least, Reason: ReasonLeastLoad}
	}
	// The longest match; among equal matches the lowest score (scanning from start).
	best, bestLen, bestScore := -1, 0, 0.0
	n := len(cands)
	for k := range n {
		i := int((start + uint64(k)) % uint64(n))
		m := 0
		if t := p.tables[cands[i].URL]; t != nil {
			for m < len(p.hashes) && t.Has(p.hashes[m]) {
				m++
			}
		}
		if m == 0 {
			continue
		}
		if s := Score(cands[i]); m > bestLen || (m == bestLen && s < bestScore) {
			best, bestLen, bestScore = i, m, s
		}
	}
	d := Decision{PrefixLookup: true}
	switch {
	case best < 0:
		d.Index, d.Reason = least, ReasonLeastLoad
	case bestScore-Score(cands[least]) > p.cfg.LoadThreshold:
		d.Index, d.Reason = least, ReasonPrefixOverload
	default:
		d.Index, d.Reason, d.PrefixHit, d.MatchedBlocks = best, ReasonPrefixHit, true, bestLen
	}
	url := cands[d.Index].URL
	t := p.tables[url]
	if t == nil {
		t = newBlockLRU(p.cfg.BlocksPerServer)
		p.tables[url] = t
	}
	for i := len(p.hashes) - 1; i >= 0; i-- { // leading blocks end most recent: evicted last
		t.Touch(p.hashes[i])
	}
	return d
}
