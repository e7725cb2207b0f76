package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTrace(t *testing.T) {
	in := `# a comment
{"arrival": 0.5, "prompt_tokens": 100, "output_tokens": 10, "prefix_group": 2, "prefix_len": 64}

{"arrival": 0.25, "prompt_token_ids": [5, 6, 7], "output_tokens": 3, "session": 42}
`
	reqs, err := ParseTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 2 || reqs[0].At != 250e6 || reqs[0].PromptLen != 3 || reqs[0].Session != "42" ||
		reqs[1].Group != 2 || reqs[1].PrefixLen != 64 || reqs[1].Output != 10 {
		t.Fatalf("%+v", reqs)
	}
	if got := reqs[1].Tokens(1, nil); len(got) != 100 {
		t.Fatalf("%d tokens", len(got))
	}
}

// TestParseTraceErrors: each bad line is an error naming its line number and the problem.
func TestParseTraceErrors(t *testing.T) {
	good := `{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5}` + "\n"
	for _, c := range []struct{ line, want string }{
		{`{"arrival": 1, "prompt_tokens": 10}`, "output_tokens 0"},
		{`{"prompt_tokens": 10, "output_tokens": 5}`, "no arrival"},
		{`{"arrival": -1, "prompt_tokens": 10, "output_tokens": 5}`, "arrival -1"},
		{`{"arrival": 1, "output_tokens": 5}`, "no prompt_tokens"},
		{`{"arrival": 1, "prompt_tokens": 10, "output_tokens": 5, "prompt": "hi"}`, "unknown field"},
		{`{"arrival": 1, "prompt_tokens": 10, "output_tokens": 5, "prefix_len": 4}`, "without prefix_group"},
		{`{"arrival": 1, "prompt_tokens": 10, "output_tokens": 5, "prefix_group": 1, "prefix_len": 40}`, "exceeds"},
		{`{"arrival": 1, "prompt_tokens": 2, "prompt_token_ids": [1], "output_tokens": 5}`, "but 1 prompt_token_ids"},
		{`{"arrival": 1, "prompt_tokens": 10, "output_tokens": 5} {}`, "more than one"},
		{`arrival,prompt,output`, "not a trace record"},
	} {
		_, err := ParseTrace(strings.NewReader(good + good + c.line + "\n" + good))
		if err == nil || !strings.Contains(err.Error(), "line 3:") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want line 3 and %q", c.line, err, c.want)
		}
	}
	if _, err := ParseTrace(strings.NewReader("\n# nothing\n")); err == nil {
		t.Error("an empty trace parsed")
	}
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(good+"{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTrace(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error %v names neither the file nor the line", err)
	}
}

// FuzzParseTrace: any input parses or fails cleanly, and what parses is valid and sorted.
func FuzzParseTrace(f *testing.F) {
	f.Add(`{"arrival": 0.5, "prompt_tokens": 100, "output_tokens": 10, "prefix_group": 2, "prefix_len": 64}`)
	f.Add(`{"arrival": 0, "prompt_token_ids": [1,2], "output_tokens": 1, "session": "a"}` + "\n#x\n" + `{"arrival": 1e-3, "prompt_tokens": 1, "output_tokens": 1}`)
	f.Add(`{"arrival": 1e400}`)
	f.Fuzz(func(t *testing.T, s string) {
		reqs, err := ParseTrace(strings.NewReader(s))
		if err != nil {
			return
		}
		for i, r := range reqs {
			if r.PromptLen < 1 || r.Output < 1 || r.At < 0 || r.PrefixLen > r.PromptLen || (i > 0 && r.At < reqs[i-1].At) {
				t.Fatalf("invalid request parsed: %+v", r)
			}
		}
	})
}
