// Package sft is supervised fine-tuning's data: conversations read from JSONL (OpenAI's
// messages format or Alpaca's instruction/input/output), rendered with the model's chat
// template, tokenized with a loss mask on the assistant's tokens, and packed into rows of T
// tokens whose examples attend only to themselves (train.DocBatches). See docs/finetuning.md,
// "Supervised fine-tuning".
//
// This file reads the examples.
package sft

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Example is one conversation, with where it came from.
type Example struct {
	Messages []Message
	Task     string // the line's optional "task" field (the generated dataset's, for per-task accuracy)
	File     string
	Line     int
}

// line is either format's fields.
type line struct {
	Messages    *[]json.RawMessage `json:"messages"`
	Instruction *string            `json:"instruction"`
	Input       string             `json:"input"`
	Output      *string            `json:"output"`
}

// ReadFile reads a JSONL file of examples, one a line (blank lines skipped). A line that is
// not valid JSON, in neither format, or without an assistant turn is an error naming the file
// and line.
func ReadFile(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	defer f.Close()
	var out []Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		msgs, err := ParseLine(b)
		if err != nil {
			return nil, fmt.Errorf("sft: %s:%d: %w", path, n, err)
		}
		var t struct {
			Task string `json:"task"`
		}
		json.Unmarshal(b, &t) // valid JSON: ParseLine read it
		out = append(out, Example{Messages: msgs, Task: t.Task, File: path, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sft: %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sft: %s: no examples", path)
	}
	return out, nil
}

// ParseLine parses one example: {"messages":[{"role":..., "content":...}, ...]} or
// {"instruction":..., "input":..., "output":...} (the input, when not empty, follows the
// instruction after a blank line in the user's turn).
func ParseLine(b []byte) ([]Message, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var msgs []Message
	switch {
	case l.Messages != nil:
		for i, raw := range *l.Messages {
			var m struct {
				Role    string           `json:"role"`
				Content *json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("messages[%d]: %v", i, err)
			}
			switch m.Role {
			case "system", "user", "assistant":
			default:
				return nil, fmt.Errorf("messages[%d]: role %q (want system, user or assistant)", i, m.Role)
			}
			var c string
			if m.Content == nil || json.Unmarshal(*m.Content, &c) != nil {
				return nil, fmt.Errorf("messages[%d]: content is not a string", i)
			}
			msgs = append(msgs, Message{Role: m.Role, Content: c})
		}
	case l.Instruction != nil && l.Output != nil:
		u := *l.Instruction
		if strings.TrimSpace(l.Input) != "" {
			u += "\n\n" + l.Input
		}
		msgs = []Message{{Role: "user", Content: u}, {Role: "assistant", Content: *l.Output}}
	default:
		return nil, fmt.Errorf(`neither {"messages": [...]} nor {"instruction", "input", "output"}`)
	}
	for _, m := range msgs {
		if m.Role == "assistant" {
			return msgs, nil
		}
	}
	return nil, fmt.Errorf("no assistant turn")
}
