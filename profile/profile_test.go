package profile

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTraceValidates(t *testing.T) {
	r := New()
	t0 := r.Start()
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	main := r.Track("compute", "worker 0")
	var wg sync.WaitGroup
	for w := 1; w <= 3; w++ {
		tr := r.Track("compute", "worker "+string(rune('0'+w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 5; i >= 0; i-- { // added out of order: the writer sorts
				tr.Span("matmul", "worker", at(100*i+10), at(100*i+60), nil)
			}
		}()
	}
	for i := range 6 {
		main.Add(Slice{Start: time.Duration(100*i) * time.Microsecond, Dur: 90 * time.Microsecond, Name: "matmul", Cat: "op", Bytes: 1e6, FLOPs: 2e6})
		main.Span("matmul", "worker", at(100*i+5), at(100*i+50), nil) // nested in the op
	}
	r.Track("engine", "engine").Span("forward", "engine", at(0), at(600), map[string]any{"rows": 1})
	wg.Wait()
	var b bytes.Buffer
	if err := r.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	n, err := Validate(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n != 6+6+18+1 {
		t.Fatalf("%d X events, want 31", n)
	}
	for _, s := range []string{`"thread_name"`, `"process_name"`, `"ph":"X"`, `"flops":2000000`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("trace lacks %s", s)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	head := `{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"w"}}`
	for name, doc := range map[string]string{
		"no array":    `{}`,
		"bad ph":      `{"traceEvents":[` + head + `,{"name":"a","ph":"Q","pid":1,"tid":1,"ts":0}]}`,
		"no dur":      `{"traceEvents":[` + head + `,{"name":"a","ph":"X","pid":1,"tid":1,"ts":0}]}`,
		"unnamed":     `{"traceEvents":[{"name":"a","ph":"X","pid":1,"tid":1,"ts":0,"dur":1}]}`,
		"order":       `{"traceEvents":[` + head + `,{"name":"a","ph":"X","pid":1,"tid":1,"ts":5,"dur":1},{"name":"b","ph":"X","pid":1,"tid":1,"ts":1,"dur":1}]}`,
		"overlapping": `{"traceEvents":[` + head + `,{"name":"a","ph":"X","pid":1,"tid":1,"ts":0,"dur":10},{"name":"b","ph":"X","pid":1,"tid":1,"ts":5,"dur":10}]}`,
	} {
		if _, err := Validate([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSummarySelfTime(t *testing.T) {
	r := New()
	tr := r.Track("p", "t")
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	tr.Add(Slice{Start: 0, Dur: us(100), Name: "outer", Cat: "op", Bytes: 1000, FLOPs: 4000})
	tr.Add(Slice{Start: us(10), Dur: us(30), Name: "inner", Cat: "op"})
	tr.Add(Slice{Start: us(50), Dur: us(20), Name: "inner", Cat: "op"})
	tr.Add(Slice{Start: us(60), Dur: us(5), Name: "ignored", Cat: "worker"})
	tab := Summarize(r.Tracks(), func(_ *Track, s Slice) bool { return s.Cat == "op" })
	if len(tab.Rows) != 2 || tab.Self != us(100) {
		t.Fatalf("table %+v", tab)
	}
	want := map[string]Row{"outer": {"outer", 1, us(50), 1000, 4000}, "inner": {"inner", 2, us(50), 0, 0}}
	for _, row := range tab.Rows {
		if row != want[row.Name] {
			t.Errorf("row %+v, want %+v", row, want[row.Name])
		}
	}
	if g := tab.Rows[0].GFLOPs(); tab.Rows[0].Name == "outer" && (g < 0.079 || g > 0.081) {
		t.Errorf("outer GFLOP/s %v, want 0.08", g)
	}
	var b bytes.Buffer
	if err := tab.Write(&b); err != nil || !strings.Contains(b.String(), "inner") || !strings.Contains(b.String(), "GFLOP/s") {
		t.Fatalf("table text %q: %v", b.String(), err)
	}
}
