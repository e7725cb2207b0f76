// Failure reasons: the errors of failed requests grouped, so a run whose requests all failed
// says why on the terminal instead of only in the saved JSON.

package bench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// FailureReason is one kind of failure and how many requests failed so.
type FailureReason struct {
	Count  int    `json:"count"`
	Reason string `json:"reason"` // the first error of the kind, shortened to maxReasonLen
}

const (
	maxReasons   = 5   // kinds listed; the rest are counted in one "other" entry
	maxReasonLen = 200 // bytes of a reason kept (cut at a rune boundary, "..." added)
)

// FailureReasons groups the non-empty errs by reason, most frequent first (ties in the order
// first seen). Errors that differ only in their numbers ("the prompt is 1124 tokens" and "1131
// tokens") are one reason, shown as its first instance. Past maxReasons kinds, the rest are
// summed into a last entry "(N other reasons)". Nil when nothing failed.
func FailureReasons(errs []string) []FailureReason {
	var out []FailureReason
	index := map[string]int{}
	for _, e := range errs {
		if e == "" {
			continue
		}
		k := reasonKey(e)
		if i, ok := index[k]; ok {
			out[i].Count++
			continue
		}
		index[k] = len(out)
		out = append(out, FailureReason{Count: 1, Reason: shorten(e, maxReasonLen)})
	}
	slices.SortStableFunc(out, func(a, b FailureReason) int { return b.Count - a.Count })
	if len(out) > maxReasons {
		rest := 0
		for _, r := range out[maxReasons:] {
			rest += r.Count
		}
		out = append(out[:maxReasons], FailureReason{Count: rest,
			Reason: fmt.Sprintf("(%d other reasons)", len(out)-maxReasons)})
	}
	return out
}

// reasonKey is e with every run of digits replaced by one '#', except in an "HTTP <status>"
// head (a 404 and a 500 are different reasons).
func reasonKey(e string) string {
	var sb strings.Builder
	start := 0
	if strings.HasPrefix(e, "HTTP ") {
		start = min(len(e), len("HTTP 000"))
		sb.WriteString(e[:start])
	}
	digits := false
	for i := start; i < len(e); i++ {
		c := e[i]
		if c >= '0' && c <= '9' {
			if !digits {
				sb.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		sb.WriteByte(c)
	}
	return sb.String()
}

// shorten cuts s to at most n bytes at a rune boundary, marking the cut with "...".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - 3
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// httpFailure is the error text of a response with a non-200 status: "HTTP <status>: " and the
// message of an OpenAI-style error body ({"error": {"message": ...}}, vLLM's older {"message":
// ...}, or {"error": "..."}), else the body with its whitespace collapsed.
func httpFailure(status int, body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		}
	}
	if msg == "" {
		msg = strings.Join(strings.Fields(string(body)), " ")
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d (empty body)", status)
	}
	return fmt.Sprintf("HTTP %d: %s", status, msg)
}
