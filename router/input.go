// The routing input of a request: its model, session key and the text its prefix is hashed
// over, parsed from the JSON body once and only when the router or the policy reads them.

package router

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/api"
)

// SessionHeader names the session of a request for the session policy.
const SessionHeader = "X-Session-ID"

// routeBody holds the request fields policies read; the rest of the body is skipped.
type routeBody struct {
	Model    string          `json:"model"`
	User     string          `json:"user"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type userModel struct {
	Model string `json:"model"`
	User  string `json:"user"`
}

// parseInput fills the Input fields wanted from a request body (session: the "user" field when
// header is ""; prompt: see PromptText; model: the "model" field). A body that is not JSON
// gives an empty Input: the upstream server is the one to reject it.
func parseInput(body []byte, header string, wantSession, wantPrompt, wantModel bool) Input {
	in := Input{SessionKey: header}
	switch {
	case wantPrompt:
		var b routeBody
		if json.Unmarshal(body, &b) != nil {
			return in
		}
		if in.SessionKey == "" {
			in.SessionKey = b.User
		}
		in.Model = b.Model
		in.Prompt = promptText(&b)
	case wantModel || (wantSession && header == ""):
		var b userModel
		if json.Unmarshal(body, &b) == nil {
			if in.SessionKey == "" {
				in.SessionKey = b.User
			}
			in.Model = b.Model
		}
	}
	return in
}

// promptText is what the prefix policy hashes: for chat, the messages rendered as
// "role\ncontent\n" each (text parts of multi-part content joined); for completions, the
// prompt string, or the token ids in decimal separated by commas (the first prompt of a batch).
func promptText(b *routeBody) string {
	if len(b.Messages) > 0 {
		var sb strings.Builder
		for _, m := range b.Messages {
			sb.WriteString(m.Role)
			sb.WriteByte('\n')
			writeContent(&sb, m.Content)
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	if len(b.Prompt) == 0 {
		return ""
	}
	texts, ids, err := api.Prompts(b.Prompt)
	switch {
	case err != nil:
		return ""
	case len(texts) > 0:
		return texts[0]
	}
	buf := make([]byte, 0, 6*len(ids[0]))
	for _, id := range ids[0] {
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, ',')
	}
	return string(buf)
}

// writeContent writes a message's content: a string, or the text of its parts.
func writeContent(sb *strings.Builder, raw json.RawMessage) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		sb.WriteString(s)
		return
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
	}
}
