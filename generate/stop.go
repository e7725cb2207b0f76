// Stop strings for streamed text: StopMatcher receives text piece by piece and releases only the
// part that can no longer become the start of a stop string, so that a stop string split across
// tokens is never streamed to the client, and the text is cut exactly where a stop string begins
// (the stop string itself is not included, as in the OpenAI API and vLLM).
package generate

import "strings"

// StopMatcher holds back a tail of the text that may still grow into a stop string.
type StopMatcher struct {
	stops   []string
	pending string // text received but not yet released
	stopped bool
}

// NewStopMatcher returns a matcher for the given stop strings (empty strings are ignored).
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// Push adds text and returns the text that is now safe to emit. stopped is true once a stop
// string has been found; the returned text then ends just before it and later calls return "".
func (m *StopMatcher) Push(text string) (out string, stopped bool) {
	if m.stopped {
		return "", true
	}
	m.pending += text
	// Earliest complete stop string wins.
	cut := -1
	for _, s := range m.stops {
		if i := strings.Index(m.pending, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out = m.pending[:cut]
		m.pending = ""
		m.stopped = true
		return out, true
	}
	// Hold back the longest suffix that is a proper prefix of some stop string.
	hold := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(m.pending)); k > hold; k-- {
			if strings.HasSuffix(m.pending, s[:k]) {
				hold = k
				break
			}
		}
	}
	out = m.pending[:len(m.pending)-hold]
	m.pending = m.pending[len(m.pending)-hold:]
	return out, false
}

// Flush returns whatever is held back (at the end of generation, when no stop string came).
func (m *StopMatcher) Flush() string {
	if m.stopped {
		return ""
	}
	out := m.pending
	m.pending = ""
	return out
}
