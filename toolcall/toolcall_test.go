// Parser tests: whole replies of each format (calls, content, malformed JSON, unicode), and the
// same replies streamed in every split, checked against OpenAI's delta shape.
package toolcall

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

type want struct {
	content string
	calls   [][2]string // name, arguments
}

var cases = []struct {
	parser, text string
	want         want
}{
	{"hermes", "Hello there.", want{"Hello there.", nil}},
	{"hermes", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		want{"", [][2]string{{"get_weather", `{"city": "Paris"}`}}}},
	{"hermes", "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
		want{"Let me check.\n", [][2]string{{"a", `{"x": 1}`}, {"b", `{}`}}}},
	{"hermes", "<tool_call>\n{\"arguments\": {\"q\": [1, 2]}, \"name\": \"late\"}\n</tool_call>",
		want{"", [][2]string{{"late", `{"q": [1, 2]}`}}}},
	// unclosed block: the call stands
	{"hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"x}\"}}", want{"", [][2]string{{"f", `{"s": "x}"}`}}}},
	// unicode in names' arguments and content
	{"hermes", "Température 🌡️ <tool_call>{\"name\": \"météo\", \"arguments\": {\"ville\": \"Zürich\\u00e9 日本\"}}</tool_call>",
		want{"Température 🌡️ ", [][2]string{{"météo", `{"ville": "Zürich\u00e9 日本"}`}}}},
	// malformed: all content
	{"hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1,,}}\n</tool_call>",
		want{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1,,}}\n</tool_call>", nil}},
	{"hermes", "<tool_call>\n{\"arguments\": {}}\n</tool_call>", want{"<tool_call>\n{\"arguments\": {}}\n</tool_call>", nil}},
	{"hermes", "a < b and <tool_cal", want{"a < b and <tool_cal", nil}},
	{"hermes", "x <tool_call>", want{"x <tool_call>", nil}},
	// cut off inside the arguments: not a call
	{"hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": ", want{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": ", nil}},

	{"llama3_json", `{"name": "get_weather", "parameters": {"city": "Paris"}}`, want{"", [][2]string{{"get_weather", `{"city": "Paris"}`}}}},
	{"llama3_json", `<|python_tag|>{"name": "a", "arguments": {"n": -1.5e3}}; {"name": "b", "parameters": {"t": true}}`,
		want{"", [][2]string{{"a", `{"n": -1.5e3}`}, {"b", `{"t": true}`}}}},
	{"llama3_json", `  {"name": "noargs"}`, want{"", [][2]string{{"noargs", `{}`}}}},
	{"llama3_json", `The answer is {"name": "x"}`, want{`The answer is {"name": "x"}`, nil}},
	{"llama3_json", `{"answer": 42}`, want{`{"answer": 42}`, nil}},
	{"llama3_json", `{"name": "f", "parameters": {"a": nul}}`, want{`{"name": "f", "parameters": {"a": nul}}`, nil}},
	{"llama3_json", `<|python`, want{`<|python`, nil}},

	{"mistral", `[TOOL_CALLS][{"name": "a", "arguments": {"x": "y"}}, {"name": "b", "arguments": {"z": [null]}}]`,
		want{"", [][2]string{{"a", `{"x": "y"}`}, {"b", `{"z": [null]}`}}}},
	{"mistral", `Sure. [TOOL_CALLS][{"name": "a", "arguments": {}}]`, want{"Sure. ", [][2]string{{"a", `{}`}}}},
	{"mistral", `[{"name": "bare", "arguments": {"k": 1}}]`, want{"", [][2]string{{"bare", `{"k": 1}`}}}},
	{"mistral", `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]other[ARGS]{}`,
		want{"", [][2]string{{"get_weather", `{"city": "Paris"}`}, {"other", `{}`}}}},
	{"mistral", `[1] is a citation`, want{`[1] is a citation`, nil}},
	{"mistral", `[TOOL_CALLS][{"name": "a", "arguments": {"x": }]`, want{`[TOOL_CALLS][{"name": "a", "arguments": {"x": }]`, nil}},
}

var idRE = regexp.MustCompile(`^call_[A-Za-z0-9]{24}$`)

func TestParse(t *testing.T) {
	for _, c := range cases {
		p, err := Lookup(c.parser)
		if err != nil {
			t.Fatal(err)
		}
		content, calls := p.Parse(c.text)
		if content != c.want.content || !sameCalls(calls, c.want.calls) {
			t.Errorf("%s %q:\n got content %q calls %v\nwant content %q calls %v", c.parser, c.text, content, calls, c.want.content, c.want.calls)
		}
		for _, cl := range calls {
			if !idRE.MatchString(cl.ID) {
				t.Errorf("id %q", cl.ID)
			}
			if !json.Valid([]byte(cl.Arguments)) {
				t.Errorf("arguments %q are not JSON", cl.Arguments)
			}
		}
	}
}

func sameCalls(got []Call, want [][2]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i, c := range got {
		if c.Name != want[i][0] || c.Arguments != want[i][1] {
			return false
		}
	}
	return true
}

// replay feeds text in the given pieces and rebuilds the message from the deltas, checking
// OpenAI's streaming shape on the way.
func replay(t *testing.T, p *Parser, pieces []string) (string, [][2]string) {
	t.Helper()
	s := p.NewStream()
	var content strings.Builder
	var calls [][2]string
	ids := map[string]bool{}
	check := func(ds []Delta) {
		for _, d := range ds {
			if d.Call == nil {
				if d.Content == "" {
					t.Errorf("empty content delta")
				}
				content.WriteString(d.Content)
				continue
			}
			c := d.Call
			if c.First {
				if c.Index != len(calls) || c.ID == "" || ids[c.ID] || c.Name == "" || c.Arguments != "" {
					t.Errorf("bad first delta %+v after %d calls", c, len(calls))
				}
				ids[c.ID] = true
				calls = append(calls, [2]string{c.Name, ""})
				continue
			}
			if c.Index != len(calls)-1 || c.ID != "" || c.Name != "" || c.Arguments == "" {
				t.Errorf("bad later delta %+v", c)
				continue
			}
			calls[c.Index][1] += c.Arguments
		}
	}
	for _, piece := range pieces {
		check(s.Feed(piece))
	}
	check(s.Finish())
	return content.String(), calls
}

func TestStreamSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		p, _ := Lookup(c.parser)
		content, calls := p.Parse(c.text)
		var wantCalls [][2]string
		for _, cl := range calls {
			wantCalls = append(wantCalls, [2]string{cl.Name, cl.Arguments})
		}
		// byte by byte (splitting UTF-8 too), every two-piece split, and random splits
		var splits [][]string
		var bytes []string
		for i := range len(c.text) {
			bytes = append(bytes, c.text[i:i+1])
		}
		splits = append(splits, bytes, []string{c.text})
		for i := 1; i < len(c.text); i++ {
			splits = append(splits, []string{c.text[:i], c.text[i:]})
		}
		for range 20 {
			var ps []string
			for rest := c.text; rest != ""; {
				n := min(len(rest), 1+rng.IntN(6))
				ps = append(ps, rest[:n])
				rest = rest[n:]
			}
			splits = append(splits, ps)
		}
		for _, ps := range splits {
			gc, gcalls := replay(t, p, ps)
			if calls == nil && c.want.content == c.text {
				// a reply that is all content streams as all content, unless a call was
				// given out before its JSON broke (then the rest is dropped)
				if gcalls == nil && gc != c.text {
					t.Errorf("%s %q in %q: content %q", c.parser, c.text, ps, gc)
				}
				continue
			}
			if gc != content || !reflect.DeepEqual(gcalls, wantCalls) {
				t.Errorf("%s %q split %q:\n got %q %v\nwant %q %v", c.parser, c.text, ps, gc, gcalls, content, wantCalls)
				break
			}
		}
	}
}

// Content that is surely not a marker goes out at once; a possible marker start is held.
func TestHoldBack(t *testing.T) {
	p, _ := Lookup("hermes")
	s := p.NewStream()
	if d := s.Feed("Hi <tool"); len(d) != 1 || d[0].Content != "Hi " {
		t.Fatalf("%+v", d)
	}
	if d := s.Feed("box>"); len(d) != 1 || d[0].Content != "<toolbox>" {
		t.Fatalf("%+v", d)
	}
	d := s.Feed("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\"")
	if len(d) != 2 || !d[0].Call.First || d[0].Call.Name != "f" || d[1].Call.Arguments != `{"a"` {
		t.Fatalf("%+v", d)
	}
	d = s.Feed(": 1}}</tool_call>")
	if len(d) != 1 || d[0].Call.Arguments != ": 1}" {
		t.Fatalf("%+v", d)
	}
	if d := s.Finish(); len(d) != 0 {
		t.Fatalf("%+v", d)
	}
	if c := s.Calls(); len(c) != 1 || c[0].Arguments != `{"a": 1}` {
		t.Fatalf("%+v", c)
	}
}

// A reply cut off inside its second call: Parse gives it all as content, ParseComplete keeps
// the first call.
func TestParseComplete(t *testing.T) {
	p, _ := Lookup("hermes")
	text := "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": \"cut"
	if c, calls := p.Parse(text); c != text || calls != nil {
		t.Fatalf("Parse: %q %v", c, calls)
	}
	if c, calls := p.ParseComplete(text); c != "" || len(calls) != 1 || calls[0].Name != "a" {
		t.Fatalf("ParseComplete: %q %v", c, calls)
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "hermes, llama3_json, mistral") {
		t.Fatalf("%v", err)
	}
}
