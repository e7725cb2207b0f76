// Package reasoning splits a reasoning model's reply into its reasoning (the text inside
// <think>...</think>) and its answer, as vLLM's reasoning parsers of the same names do:
//
//   - qwen3: the reply reasons when it opens with <think>; the reasoning ends at </think>. A
//     reply that does not open with <think> (thinking switched off) is all answer.
//   - deepseek_r1: the chat template puts <think> in the prompt, so the reply starts inside the
//     reasoning; everything before </think> is reasoning (a <think> the model writes itself is
//     dropped).
//
// A reply cut off before </think> is all reasoning. Leading newlines of the answer are dropped
// (the templates strip them when the reply is fed back). Streamed, text that may be the start
// of a tag is held back until it is known not to be. Wrap (constraint.go) keeps a grammar off
// the reasoning and on the answer.
package reasoning

import (
	"fmt"
	"sort"
	"strings"
)

const (
	Start = "<think>"
	End   = "</think>"
)

// Parser is a reasoning format.
type Parser struct {
	name         string
	startsInside bool // the reply begins inside the reasoning (the prompt opened it)
}

var parsers = map[string]*Parser{
	"qwen3":       {name: "qwen3"},
	"deepseek_r1": {name: "deepseek_r1", startsInside: true},
}

// Lookup returns the parser called name (qwen3, deepseek_r1).
func Lookup(name string) (*Parser, error) {
	if p, ok := parsers[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown reasoning parser %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the known parsers.
func Names() []string {
	var out []string
	for n := range parsers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Name is the parser's name.
func (p *Parser) Name() string { return p.name }

// Parse splits a whole reply.
func (p *Parser) Parse(text string) (reasoning, content string) {
	s := p.NewStream()
	r1, c1 := s.Feed(text)
	r2, c2 := s.Finish()
	return r1 + r2, c1 + c2
}

// Stream follows a streamed reply. Not safe for concurrent use.
type Stream struct {
	p     *Parser
	mode  int    // 0 the start, 1 reasoning, 2 answer
	held  string // text not given out yet
	lead  bool   // the answer has not started: drop its leading newlines
	began bool   // the reasoning's opening tag is dealt with
}

// NewStream starts following a reply.
func (p *Parser) NewStream() *Stream {
	s := &Stream{p: p}
	if p.startsInside {
		s.mode = 1
	}
	return s
}

// Reasoning reports whether the reply is still inside its reasoning.
func (s *Stream) Reasoning() bool { return s.mode < 2 }

// Feed adds the next piece of the reply and returns the reasoning and answer text that can be
// given out now.
func (s *Stream) Feed(delta string) (reasoning, content string) {
	s.held += delta
	return s.run(false)
}

// Finish gives out what is still held back.
func (s *Stream) Finish() (reasoning, content string) { return s.run(true) }

func (s *Stream) run(final bool) (reasoning, content string) {
	var r, c strings.Builder
	for {
		switch s.mode {
		case 0:
			t := strings.TrimLeft(s.held, " \t\r\n")
			switch {
			case strings.HasPrefix(t, Start):
				s.held, s.mode, s.began = t[len(Start):], 1, true
			case !final && strings.HasPrefix(Start, t):
				return r.String(), c.String()
			default:
				s.mode = 2
			}
		case 1:
			if !s.began {
				// deepseek_r1: a <think> the model writes again is not reasoning text
				t := strings.TrimLeft(s.held, " \t\r\n")
				switch {
				case strings.HasPrefix(t, Start):
					s.held = t[len(Start):]
				case !final && strings.HasPrefix(Start, t):
					return r.String(), c.String()
				}
				s.began = true
			}
			if i := strings.Index(s.held, End); i >= 0 {
				r.WriteString(s.held[:i])
				s.held, s.mode, s.lead = s.held[i+len(End):], 2, true
				continue
			}
			keep := 0
			if !final {
				keep = heldBack(s.held, End)
			}
			r.WriteString(s.held[:len(s.held)-keep])
			s.held = s.held[len(s.held)-keep:]
			return r.String(), c.String()
		case 2:
			if s.lead {
				s.held = strings.TrimLeft(s.held, "\n")
				if s.held == "" {
					return r.String(), c.String()
				}
				s.lead = false
			}
			c.WriteString(s.held)
			s.held = ""
			return r.String(), c.String()
		}
	}
}

// heldBack is how many bytes at the end of t could be the start of tag.
func heldBack(t, tag string) int {
	for k := min(len(t), len(tag)-1); k > 0; k-- {
		if strings.HasSuffix(t, tag[:k]) {
			return k
		}
	}
	return 0
}
