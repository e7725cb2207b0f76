// This file is Registry: the adapters a server has loaded, by name and by id, in an immutable
// snapshot swapped on every load and unload so the executor reads it without locks. Ids are
// never reused: a sequence started under an unloaded adapter's id finds no pairs (and the
// engine's prefix cache, keyed by id, never mixes an old adapter's blocks with a new one's).
package lora

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
)

// Registry holds loaded adapters; it implements exec.Adapters.
type Registry struct {
	// MaxLoRAs is how many adapters may be loaded at once (0: no limit); MaxRank the largest
	// rank accepted (0: MaxRank).
	MaxLoRAs, MaxRank int

	mu     sync.Mutex // serializes Add and Remove
	next   uint32
	snap   atomic.Pointer[snapshot]
	loaded atomic.Int64 // adapters ever added (stats)
}

type snapshot struct {
	byName   map[string]*Entry
	byID     map[uint32]*Entry
	byWeight map[string]map[uint32]*Pair
}

// Entry is one loaded adapter.
type Entry struct {
	Name    string
	Path    string
	ID      uint32
	Adapter *Adapter
}

func (r *Registry) load() *snapshot {
	if s := r.snap.Load(); s != nil {
		return s
	}
	return &snapshot{}
}

// Add registers a under name (an error when the name is taken, the registry is full, or a's
// rank is above MaxRank) and returns its id.
func (r *Registry) Add(name, path string, a *Adapter) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.load()
	maxRank := r.MaxRank
	if maxRank <= 0 || maxRank > MaxRank {
		maxRank = MaxRank
	}
	switch {
	case name == "":
		return 0, fmt.Errorf("lora: an adapter needs a name")
	case old.byName[name] != nil:
		return 0, fmt.Errorf("lora: an adapter named %q is already loaded", name)
	case r.MaxLoRAs > 0 && len(old.byName) >= r.MaxLoRAs:
		return 0, fmt.Errorf("lora: %d adapters are loaded, --max-loras %d: unload one first", len(old.byName), r.MaxLoRAs)
	case a.Rank() > maxRank:
		return 0, fmt.Errorf("lora: adapter %q (%s) has rank %d, above --max-lora-rank %d", name, path, a.Rank(), maxRank)
	}
	for _, p := range a.Pairs {
		p.prepare() // before the snapshot is published: the executor only reads pairs
	}
	r.next++
	e := &Entry{Name: name, Path: path, ID: r.next, Adapter: a}
	s := &snapshot{byName: map[string]*Entry{name: e}, byID: map[uint32]*Entry{e.ID: e}, byWeight: map[string]map[uint32]*Pair{}}
	for _, o := range old.byName {
		s.byName[o.Name], s.byID[o.ID] = o, o
	}
	for _, o := range s.byID {
		for w, p := range o.Adapter.Pairs {
			if s.byWeight[w] == nil {
				s.byWeight[w] = map[uint32]*Pair{}
			}
			s.byWeight[w][o.ID] = p
		}
	}
	r.snap.Store(s)
	r.loaded.Add(1)
	return e.ID, nil
}

// Remove unloads the adapter called name; false when there is none.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.load()
	e := old.byName[name]
	if e == nil {
		return false
	}
	s := &snapshot{byName: map[string]*Entry{}, byID: map[uint32]*Entry{}, byWeight: map[string]map[uint32]*Pair{}}
	for _, o := range old.byName {
		if o == e {
			continue
		}
		s.byName[o.Name], s.byID[o.ID] = o, o
		for w, p := range o.Adapter.Pairs {
			if s.byWeight[w] == nil {
				s.byWeight[w] = map[uint32]*Pair{}
			}
			s.byWeight[w][o.ID] = p
		}
	}
	r.snap.Store(s)
	return true
}

// Lookup returns the adapter called name.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	e := r.load().byName[name]
	return e, e != nil
}

// List returns the loaded adapters sorted by name.
func (r *Registry) List() []*Entry {
	s := r.load()
	out := make([]*Entry, 0, len(s.byName))
	for _, e := range s.byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AddLoRA implements exec.Adapters.
func (r *Registry) AddLoRA(pool *kernels.Pool, segs []exec.LoRASeg, weight string, out, x []float32, m, k, n int) error {
	pairs := r.load().byWeight[weight]
	if len(pairs) == 0 {
		return nil
	}
	return applySegs(pool, segs, func(id uint32) *Pair { return pairs[id] }, weight, out, x, m, k, n)
}
