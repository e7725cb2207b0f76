// This file checks the Matcher's calls one by one: Done, CanEnd, EOS, Rollback, ForcedBytes,
// Limits errors and Compile errors; and a fuzz test that random bytes never panic.

package grammar

import (
	"fmt"
	"strings"
	"testing"
)

func TestDoneCanEnd(t *testing.T) {
	g := mustCompile(t, handIRs["yesno"])
	m := g.NewMatcher(nil)
	if m.CanEnd() || m.Done() {
		t.Fatal("empty output: CanEnd/Done")
	}
	if err := m.AcceptBytes([]byte("ye")); err != nil {
		t.Fatal(err)
	}
	if m.CanEnd() || m.Done() {
		t.Fatal(`"ye": CanEnd/Done`)
	}
	if err := m.AcceptBytes([]byte("s")); err != nil {
		t.Fatal(err)
	}
	if !m.CanEnd() || !m.Done() {
		t.Fatal(`"yes": want CanEnd and Done`)
	}
	if m.AcceptBytes([]byte("s")) == nil {
		t.Fatal(`"yess" accepted`)
	}
	// "a" "b"*: complete after "a" but not done
	g = mustCompile(t, ruleIR(map[string]*Expr{"root": Seq(Lit("a"), Star(Lit("b")))}))
	m = g.NewMatcher(nil)
	m.AcceptBytes([]byte("ab"))
	if !m.CanEnd() || m.Done() {
		t.Fatal(`"ab" of a b*: want CanEnd, not Done`)
	}
}

func TestEOSMask(t *testing.T) {
	v := NewVocab([][]byte{[]byte("yes"), []byte("no"), nil, []byte("y"), []byte("es"), []byte("EOS")}, []int{5})
	g := mustCompile(t, handIRs["yesno"])
	m := g.NewMatcher(v)
	mask := make([]uint64, 1)
	m.FillMask(mask)
	if mask[0] != 0b1011 {
		t.Fatalf("start mask %b, want 1011", mask[0])
	}
	if m.Accept(5) == nil || m.Accept(2) == nil {
		t.Fatal("EOS or an empty token accepted at the start")
	}
	if err := m.Accept(3); err != nil {
		t.Fatal(err)
	}
	m.FillMask(mask)
	if mask[0] != 0b10000 {
		t.Fatalf(`mask after "y" %b, want 10000`, mask[0])
	}
	if err := m.Accept(4); err != nil {
		t.Fatal(err)
	}
	m.FillMask(mask)
	if mask[0] != 0b100000 {
		t.Fatalf(`mask after "yes" %b, want only EOS`, mask[0])
	}
	if err := m.Accept(5); err != nil {
		t.Fatal(err)
	}
}

func TestRollback(t *testing.T) {
	ir := ruleIR(map[string]*Expr{"root": Seq(Lit("{"), Star(Alt(Re(`[0-9]+`), Lit(","))), Lit("}"))})
	g := mustCompile(t, ir)
	m := g.NewMatcher(nil)
	steps := []string{"{", "12", ",3", "4", "}"}
	var canEnd []bool
	for _, s := range steps {
		if err := m.AcceptBytes([]byte(s)); err != nil {
			t.Fatal(err)
		}
		canEnd = append(canEnd, m.CanEnd())
	}
	if !m.Done() {
		t.Fatal("not done after }")
	}
	m.Rollback(2)
	if m.CanEnd() || m.AcceptBytes([]byte("5}")) != nil || !m.Done() {
		t.Fatal(`after rolling back "4", "}": "5}" should complete`)
	}
	m.Rollback(10)
	if m.AcceptBytes([]byte("1")) == nil {
		t.Fatal(`rollback to the start: "1" accepted`)
	}
	if err := m.AcceptBytes([]byte("{1}")); err != nil || !m.CanEnd() {
		t.Fatal(`"{1}" after a full rollback`, err)
	}
	if m.AcceptBytes([]byte("x")) == nil || !m.CanEnd() {
		t.Fatal("a refused AcceptBytes changed the state")
	}
}

func TestForcedBytes(t *testing.T) {
	ir := ruleIR(map[string]*Expr{
		"root": Seq(Lit(`{"name":`), Re(`"[a-z]*"`), Lit(`,"age":`), Re(`[0-9]+`), Lit("}")),
	})
	g := mustCompile(t, ir)
	m := g.NewMatcher(nil)
	if f := m.ForcedBytes(); string(f) != `{"name":"` {
		t.Fatalf("forced at start %q", f)
	}
	m.AcceptBytes([]byte(`{"name":"bob`))
	if f := m.ForcedBytes(); f != nil {
		t.Fatalf("forced inside the string %q", f)
	}
	m.AcceptBytes([]byte(`"`))
	if f := m.ForcedBytes(); string(f) != `,"age":` {
		t.Fatalf("forced after the string %q", f)
	}
	m.AcceptBytes([]byte(`,"age":4`))
	if f := m.ForcedBytes(); f != nil {
		t.Fatalf("forced after a digit %q", f)
	}
	// the state is unchanged by ForcedBytes
	if err := m.AcceptBytes([]byte("2}")); err != nil || !m.Done() {
		t.Fatal("ForcedBytes changed the state", err)
	}
	g = mustCompile(t, handIRs["yesno"])
	if f := g.NewMatcher(nil).ForcedBytes(); f != nil {
		t.Fatalf("yes|no forces %q", f)
	}
}

func TestLimits(t *testing.T) {
	// repeats are counted, not expanded: huge bounds cost nothing
	huge := ruleIR(map[string]*Expr{"root": Seq(Rep(Lit("ab"), 0, 50_000_000), Rep(Lit("c"), 3, 1<<40))})
	g, err := Compile(huge, Limits{MaxRules: 10})
	if err != nil {
		t.Fatalf("huge repeat: %v", err)
	}
	if ok, whole := matches(g, "ababccc"); !ok || !whole {
		t.Error(`huge repeat: "ababccc" refused`)
	}
	if _, whole := matches(g, "abcc"); whole {
		t.Error(`huge repeat: "abcc" accepted`)
	}
	many := ruleIR(map[string]*Expr{"root": Lit("x")})
	for i := range 3000 {
		many.Rules[fmt.Sprintf("r%d", i)] = Lit("y")
		many.Rules["root"] = Alt(many.Rules["root"], Ref(fmt.Sprintf("r%d", i)))
	}
	if _, err := Compile(many, Limits{MaxRules: 2500}); err == nil || !strings.Contains(err.Error(), "MaxRules") {
		t.Errorf("3000 rules over MaxRules 2500: %v", err)
	}
	if _, err := Compile(many, Limits{}); err != nil {
		t.Errorf("3000 rules under the default limit: %v", err)
	}
	bigRe := ruleIR(map[string]*Expr{"root": Re(`\pL{1000}`)})
	if _, err := Compile(bigRe, Limits{MaxLexerBytes: 1 << 20}); err == nil || !strings.Contains(err.Error(), "MaxLexerBytes") {
		t.Errorf("large regex: %v", err)
	}
	undef := ruleIR(map[string]*Expr{"root": Ref("nope")})
	if _, err := Compile(undef, Limits{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("undefined rule: %v", err)
	}
	empty := ruleIR(map[string]*Expr{"root": Seq(Lit("a"), Alt())})
	if _, err := Compile(empty, Limits{}); err == nil {
		t.Error("a grammar with no sentence compiled")
	}
}

func TestLexerCapStillCorrect(t *testing.T) {
	// with a tiny lexer cap, states are not remembered but matching stays exact
	ir := handIRs["unicode"]
	g, err := Compile(ir, Limits{MaxLexerBytes: 40000})
	if err != nil {
		t.Fatal(err)
	}
	crossCheck(t, ir, g, allStrings(testAlpha, 4))
}

func FuzzMatcher(f *testing.F) {
	ir := ruleIR(map[string]*Expr{
		"root": Alt(Ref("obj"), Re(`-?[0-9]+(\.[0-9]+)?`), Re(`"([^"\\]|\\.)*"`)),
		"obj":  Seq(Lit("{"), Opt(Seq(Ref("root"), Star(Seq(Lit(","), Ref("root"))))), Lit("}")),
	})
	g, err := Compile(ir, Limits{})
	if err != nil {
		f.Fatal(err)
	}
	v := smallVocab()
	f.Add([]byte(`{1,"a",{}}`))
	f.Add([]byte("\xff{{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := g.NewMatcher(v)
		mask := make([]uint64, v.MaskWords())
		for len(b) > 0 {
			n := min(len(b), int(b[0]%4)+1)
			m.AcceptBytes(b[:n])
			m.FillMask(mask)
			m.ForcedBytes()
			m.Done()
			if b[0] == '!' {
				m.Rollback(1)
			}
			b = b[n:]
		}

	})
}
