package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestSSERoundTrip(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewSSEWriter(rec)
	for i := range 3 {
		if err := w.Event(map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	w.Done()
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := NewSSEReader(strings.NewReader(": comment\n\n" + rec.Body.String()))
	for i := range 3 {
		data, err := r.Next()
		if err != nil || string(data) != `{"i":`+string(rune('0'+i))+`}` {
			t.Fatalf("event %d: %q %v", i, data, err)
		}
	}
	if _, err := r.Next(); !errors.Is(err, ErrDone) {
		t.Fatalf("want ErrDone, got %v", err)
	}
	if _, err := NewSSEReader(strings.NewReader("data: {\"a\":1}")).Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut stream: %v", err)
	}
	d, err := NewSSEReader(strings.NewReader("data: a\ndata: b\n\n")).Next()
	if err != nil || string(d) != "a\nb" {
		t.Fatalf("multi-line: %q %v", d, err)
	}
}

func TestPromptsAndStops(t *testing.T) {
	for _, tc := range []struct {
		in    string
		texts []string
		ids   [][]int
		bad   bool
	}{
		{in: `"hi"`, texts: []string{"hi"}},
		{in: `["a","b"]`, texts: []string{"a", "b"}},
		{in: `[1,2]`, ids: [][]int{{1, 2}}},
		{in: `[[1],[2,3]]`, ids: [][]int{{1}, {2, 3}}},
		{in: `[]`, bad: true}, {in: `null`, bad: true}, {in: `5`, bad: true}, {in: `[1,"a"]`, bad: true}, {in: ``, bad: true},
	} {
		texts, ids, err := Prompts(json.RawMessage(tc.in))
		if (err != nil) != tc.bad || !reflect.DeepEqual(texts, tc.texts) || !reflect.DeepEqual(ids, tc.ids) {
			t.Errorf("Prompts(%s) = %v %v %v", tc.in, texts, ids, err)
		}
	}
	for in, want := range map[string][]string{`"x"`: {"x"}, `["x","","y"]`: {"x", "y"}, ``: nil, `null`: nil} {
		got, err := Stops(json.RawMessage(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Stops(%s) = %v %v", in, got, err)
		}
	}
	if _, err := Stops(json.RawMessage(`[1]`)); err == nil {
		t.Error("Stops([1]) accepted")
	}
}

func TestSSENamedEvents(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewSSEWriter(rec)
	w.NamedEvent("response.created", map[string]int{"sequence_number": 0})
	w.NamedEvent("response.completed", map[string]int{"sequence_number": 1})
	if !strings.HasPrefix(rec.Body.String(), "event: response.created\ndata: {") {
		t.Fatalf("stream: %q", rec.Body.String())
	}
	r := NewSSEReader(rec.Body)
	for i, want := range []string{"response.created", "response.completed"} {
		name, data, err := r.NextEvent()
		if err != nil || name != want || string(data) != `{"sequence_number":`+string(rune('0'+i))+`}` {
			t.Fatalf("event %d: %q %q %v", i, name, data, err)
		}
	}
	if _, _, err := r.NextEvent(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}
