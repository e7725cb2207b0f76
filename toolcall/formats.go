// The three formats, as step functions over a Stream: hermes, llama3_json and mistral.

package toolcall

import "strings"

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
	pythonTag   = "<|python_tag|>"
	mistralMark = "[TOOL_CALLS]"
	mistralArgs = "[ARGS]"
)

func init() {
	register("hermes", hermesStep)
	register("llama3_json", llama3Step)
	register("mistral", mistralStep)
}

// hermes: content, then <tool_call>{json}</tool_call> blocks; text between and after the
// blocks is dropped. Modes: 0 content, 1 in a block, 2 after its object, 3 between blocks.
func hermesStep(s *Stream) bool {
	switch s.mode {
	case 0, 3:
		if !s.untilMarker(hermesOpen, s.mode == 0) {
			return false
		}
		s.mode = 1
		return true
	case 1:
		if !s.object("arguments") {
			return s.plain || s.drop
		}
		s.mode = 2
		return true
	}
	t := s.skipWS()
	switch {
	case strings.HasPrefix(t, hermesClose):
		s.pos += len(hermesClose)
	case !s.final && strings.HasPrefix(hermesClose, t):
		return false
	}
	s.mode = 3 // a block without its closing tag still counts
	return true
}

// llama3_json: the whole reply is calls, {"name": ..., "parameters": {...}} (or "arguments"),
// optionally after <|python_tag|>, several joined by ";". A reply that starts otherwise is
// content. Modes: 0 the start, 1 an object, 2 after an object.
func llama3Step(s *Stream) bool {
	rest := s.text[s.pos:]
	t := strings.TrimLeft(rest, " \t\r\n")
	switch s.mode {
	case 0:
		s.markStart = s.pos
		switch {
		case strings.HasPrefix(t, pythonTag):
			s.pos += len(rest) - len(t) + len(pythonTag)
			s.mode = 1
		case strings.HasPrefix(t, "{"):
			s.pos += len(rest) - len(t)
			s.mode = 1
		case !s.final && strings.HasPrefix(pythonTag, t): // "" included
			return false
		default:
			s.plain = true
		}
		return true
	case 1:
		if !s.object("parameters", "arguments") {
			return s.plain || s.drop
		}
		s.mode = 2
		return true
	}
	switch {
	case t == "":
		return false
	case t[0] == ';':
		s.pos += len(rest) - len(t) + 1
		s.markStart = s.pos
		s.mode = 1
	default:
		s.drop = true
	}
	return true
}

// mistral: content, then [TOOL_CALLS] and a JSON list of call objects, or [TOOL_CALLS]name
// [ARGS]{...} (repeated for several calls). [TOOL_CALLS] is a control token that detokenizes
// to nothing, so a reply that starts with a list of objects is read as calls too.
// Modes: 0 start, 1 content, 2 after the marker, 3 list open, 4 list item, 5 after an item,
// 6 a name before [ARGS], 7 the arguments after [ARGS], 8 after the calls.
func mistralStep(s *Stream) bool {
	rest := s.text[s.pos:]
	t := strings.TrimLeft(rest, " \t\r\n")
	switch s.mode {
	case 0:
		if t == "" || t == "[" || (t[0] == '[' && strings.TrimLeft(t[1:], " \t\r\n") == "") {
			if s.final {
				s.plain = true
				return true
			}
			return false
		}
		if t[0] == '[' && strings.TrimLeft(t[1:], " \t\r\n")[0] == '{' {
			s.markStart = s.pos
			s.pos += len(rest) - len(t)
			s.mode = 3
			return true
		}
		s.mode = 1
		return true
	case 1, 8:
		if !s.untilMarker(mistralMark, s.mode == 1) {
			return false
		}
		s.mode = 2
		return true
	case 2:
		switch {
		case t == "":
			if s.final {
				s.fail()
				return true
			}
			return false
		case t[0] == '[':
			s.pos += len(rest) - len(t)
			s.mode = 3
		default:
			s.mode = 6
		}
		return true
	case 3:
		s.pos += len(rest) - len(t) + 1 // the '['
		s.mode = 4
		return true
	case 4:
		if !s.object("arguments") {
			return s.plain || s.drop
		}
		s.mode = 5
		return true
	case 5:
		switch {
		case t == "":
			return false
		case t[0] == ',':
			s.pos += len(rest) - len(t) + 1
			s.mode = 4
		default: // ']' or anything else ends the list
			if t[0] == ']' {
				s.pos += len(rest) - len(t) + 1
			}
			s.mode = 8
		}
		return true
	case 6:
		i := strings.Index(rest, mistralArgs)
		if i < 0 {
			if s.final || len(rest) > 256 || strings.ContainsAny(rest, "{}\n") {
				s.fail()
				return true
			}
			s.begin()
			return false
		}
		name := strings.TrimSpace(rest[:i])
		if name == "" || strings.ContainsAny(name, " \"{}[]") {
			s.fail()
			return true
		}
		s.name(name)
		s.pos += i + len(mistralArgs)
		s.mode = 7
		return true
	case 7:
		if t == "" {
			return false
		}
		st, start, end := scanValue(rest)
		switch st {
		case scanInvalid:
			s.fail()
			return true
		case scanPartial:
			s.args(rest[start:])
			return false
		}
		s.args(rest[start:end])
		s.end()
		s.pos += end
		s.mode = 8
		return true
	}
	return false
}
