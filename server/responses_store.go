// Output items kept for item_reference: a client that sends store: true (or leaves it out, as
// the Vercel AI SDK does) may refer to an earlier response's items by id instead of repeating
// them, and the SDK does so for assistant messages. The last maxStoredItems items stay in
// memory (first in, first out); nothing is written to disk and there is no GET endpoint.
package server

import (
	"encoding/json"
	"sync"

	"github.com/llmcloud/llmcloud/api"
)

const maxStoredItems = 4096

// itemStore maps item ids to the input item each output item reads back as. The zero value
// is ready.
type itemStore struct {
	mu    sync.Mutex
	items map[string]map[string]json.RawMessage
	order []string
	next  int // the oldest entry of order, once full
}

// put keeps a response's output items.
func (s *itemStore) put(out []api.ResponseItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[string]map[string]json.RawMessage{}
	}
	for _, it := range out {
		if _, ok := s.items[it.ID]; ok {
			continue
		}
		s.items[it.ID] = asInputItem(it)
		if len(s.order) < maxStoredItems {
			s.order = append(s.order, it.ID)
			continue
		}
		delete(s.items, s.order[s.next])
		s.order[s.next] = it.ID
		s.next = (s.next + 1) % maxStoredItems
	}
}

// get returns the input item stored under id.
func (s *itemStore) get(id string) (map[string]json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[id]
	return it, ok
}

// asInputItem is an output item as the input item it stands for.
func asInputItem(it api.ResponseItem) map[string]json.RawMessage {
	raw := func(v any) json.RawMessage {
		b, _ := json.Marshal(v)
		return b
	}
	switch it.Type {
	case "function_call":
		args := ""
		if it.Arguments != nil {
			args = *it.Arguments
		}
		return map[string]json.RawMessage{"type": raw("function_call"), "call_id": raw(it.CallID),
			"name": raw(it.Name), "arguments": raw(args)}
	case "message":
		return map[string]json.RawMessage{"type": raw("message"), "role": raw("assistant"), "content": raw(it.Content)}
	}
	return map[string]json.RawMessage{"type": raw(it.Type)}
}
