// Tests of the GBNF parser on grammars as users write them, checked for structure (Validate,
// regexes that parse) and for the language they describe (the test recognizer).

package grammar

import (
	"regexp/syntax"
	"strings"
	"testing"
)

// A JSON grammar in the style of llama.cpp's examples (written for this test).
const jsonGBNF = `# JSON, with optional white space
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws

# at most one space or newline between tokens
ws ::= | " " | "\n" [ \t]{0,20}
`

const arithGBNF = `root  ::= expr
expr  ::= term (("+" | "-") term)*
term  ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
`

const listGBNF = `root ::= item+
# an item is a dash, a space and the rest of the line
item ::= "- " [^\r\n]+ "\n"
`

const chessGBNF = `# one move per turn, e.g. "1. e4 e5 2. Nf3 Nc6"
root   ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move   ::= (pawn | nonpawn | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
`

func mustGBNF(t *testing.T, src string) *IR {
	t.Helper()
	g, err := GBNF(src)
	if err != nil {
		t.Fatal(err)
	}
	checkIR(t, g)
	return g
}

// checkIR asserts g validates and every regex in it parses as Go regexp/syntax (Perl).
func checkIR(t testing.TB, g *IR) {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v\n%s", err, g)
	}
	var walk func(e *Expr)
	walk = func(e *Expr) {
		if e.Kind == KindRegex {
			if _, err := syntax.Parse(e.Text, syntax.Perl); err != nil {
				t.Fatalf("regex %q does not parse: %v", e.Text, err)
			}
		}
		for _, s := range e.Subs {
			walk(s)
		}
	}
	for _, e := range g.Rules {
		walk(e)
	}
}

func TestGBNFJSON(t *testing.T) {
	g := mustGBNF(t, jsonGBNF)
	if g.Start != "root" || len(g.Rules) != 7 {
		t.Fatalf("start %q, %d rules:\n%s", g.Start, len(g.Rules), g)
	}
	checkLanguage(t, g,
		[]string{`{}`, `{"a":1}`, `{"a": [1, 2.5, -3e10, "x\n"], "b": {"c": null}}`, "{\n  \"k\": true}",
			`{"u":"\u00e9\\\""}`, `{"e": []}`},
		[]string{``, `[]`, `{"a":}`, `{"a":1,}`, `{'a':1}`, `{"a":01}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":1}}`})
}

func TestGBNFArithmetic(t *testing.T) {
	g := mustGBNF(t, arithGBNF)
	checkLanguage(t, g, []string{"1", "1+2*3", "(1+2)*3.5", "-(4/2)", "((7))"},
		[]string{"", "1+", "(1", "1 + 2", "1..2", "+1"})
}

func TestGBNFList(t *testing.T) {
	g := mustGBNF(t, listGBNF)
	checkLanguage(t, g, []string{"- milk\n", "- milk\n- eggs and ham\n"},
		[]string{"- \n", "milk\n", "- milk", "- a\n\n"})
}

func TestGBNFChess(t *testing.T) {
	g := mustGBNF(t, chessGBNF)
	checkLanguage(t, g, []string{"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O Qxd1+\n"},
		[]string{"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n2. Zf3 a6\n"})
}

func TestGBNFLiteralsAndClasses(t *testing.T) {
	g := mustGBNF(t, `root ::= "\x41\u00e9\U0001F600\n\t\"\\\[" [a-z] [^"\\] [\x00-\x1f] [-a] [a-] [\]] [é-ü] . []?`)
	want := []string{"Aé😀\n\t\"\\[", "[a-z]", `[^\x{22}\x{5c}]`, `[\x{0}-\x{1f}]`, `[\x{2d}a]`, `[a\x{2d}]`,
		`[\x{5d}]`, `[\x{e9}-\x{fc}]`, `(?s:.)`, `(()){0,1}`}
	root := g.Rules["root"]
	if root.Kind != KindSeq || len(root.Subs) != len(want) {
		t.Fatalf("root = %s", root)
	}
	for i, e := range root.Subs {
		if e.Text != want[i] && e.String() != want[i] {
			t.Errorf("item %d = %s, want %s", i, e, want[i])
		}
	}
	checkLanguage(t, g, []string{"Aé😀\n\t\"\\[qx\x07-a]ö\n", "Aé😀\n\t\"\\[qx\x07a-]ö😀"},
		[]string{"Aé😀\n\t\"\\[q\"\x07-a]ö\n", "Aé😀\n\t\"\\[qx \x07-a]ö\n", "Aé😀\n\t\"\\[qx\x07-a]ö"})
}

func TestGBNFRepeats(t *testing.T) {
	g := mustGBNF(t, `root ::= "a"{2} "b"{1,} "c"{0,2} "d"{,1} ("e" "f"?){3}`)
	checkLanguage(t, g, []string{"aabeee", "aabbbccdefeef", "aabcdefefe"},
		[]string{"abeee", "aaeee", "aabcccdeee", "aabddeee", "aabee", "aabeeee"})
	r := g.Rules["root"].Subs
	if r[0].Min != 2 || r[0].Max != 2 || r[1].Min != 1 || r[1].Max != -1 || r[3].Min != 0 || r[3].Max != 1 {
		t.Errorf("repeats: %s", g.Rules["root"])
	}
}

func TestGBNFMultiLine(t *testing.T) {
	for _, src := range []string{
		"root ::= \"a\"\n     | \"b\"\n",                // continuation line starting with |
		"root ::= \"a\" |\n  \"b\"",                     // line ending with |
		"root ::= (\n  \"a\" # first\n  | \"b\"\n)\n\n", // inside parentheses
		"root ::=\n  \"a\" | \"b\"\n# trailing comment", // body on the next line
		"root ::= x\n  | y\nx ::= \"a\"\ny ::= \"b\"",   // continuation, then more rules
		"\r\nroot ::= \"a\" | \"b\"\r\n",                // CRLF line ends
		"\uFEFFroot ::= \"a\" | \"b\"",                  // a byte order mark
	} {
		g, err := GBNF(src)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		checkIR(t, g)
		checkLanguage(t, g, []string{"a", "b"}, []string{"", "ab", "c"})
	}
	// An indented line that starts no rule goes on with the rule before it.
	g := mustGBNF(t, "root ::= \"a\"\n   \"b\"\n")
	checkLanguage(t, g, []string{"ab"}, []string{"a", "b"})
	// An empty alternative is the empty string.
	g = mustGBNF(t, "root ::= \"x\" ws \"y\"\nws ::= | \" \" ws")
	checkLanguage(t, g, []string{"xy", "x   y"}, []string{"x\ty"})
}

func TestGBNFErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "line 1:1: no rules"},
		{"root ::= \"a\"\nroot ::= \"b\"", "line 2:1: rule \"root\" is defined twice (first on line 1)"},
		{"item ::= \"a\"", "no rule named root"},
		{"root ::= item\n", "line 1:10: undefined rule \"item\""},
		{"root ::= a\na ::= b c\nb ::= \"x\"", "line 2:9: undefined rule \"c\""},
		{"root ::= \"abc", "line 1:10: unterminated string"},
		{"root ::= [abc", "line 1:10: unterminated character class"},
		{"root ::= (\"a\" | \"b\"", "line 1:10: unclosed ("},
		{"root ::= \"a\")", "line 1:13: unmatched )"},
		{"root ::= \"a\"{2,1}", "line 1:13: repeat {2,1}: the maximum is below the minimum"},
		{"root ::= \"a\"{2", "line 1:15: expected } to close the repeat"},
		{"root ::= \"a\"{x}", "line 1:14: expected a number"},
		{"root ::= \"a\"{999999999}", "is over 100000"},
		{"root ::= * \"a\"", "line 1:10: * has nothing before it to repeat"},
		{"root ::= \"\\q\"", "line 1:11: unknown escape \\q"},
		{"root ::= \"\\x4\"", "\\x needs 2 hex digits"},
		{"root ::= \"\\UFFFFFFFF\"", "is not a Unicode code point"},
		{"root ::= [z-a]", "line 1:11: bad range 'z'-'a'"},
		{"root = \"a\"", "line 1:6: expected ::= after rule name \"root\""},
		{"::= \"a\"", "line 1:1: expected a rule name"},
		{"root ::= <think>", "token references"},
		{"root ::= \"a\" b ::= \"c\"", "line 1:14: rule \"b\" must start on a line of its own"},
		{"root ::= ( \"a\"\nb ::= \"c\" )", "line 2:1: rule \"b\" starts inside parentheses"},
		{"root ::= \"a\" ;", "line 1:14: unexpected ';'"},
		{"root ::= \"\xff\"", "invalid UTF-8"},
		{"root ::= \"a\" (= \"b\")", "line 1:14: lookahead assertions (= ...) are not supported"},
		{"root ::= " + strings.Repeat("(", 501), "line 1:510: parentheses nest deeper than 500"},
	} {
		_, err := GBNF(c.src)
		if err == nil {
			t.Errorf("%q: no error, want %q", c.src, c.want)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q, want %q", c.src, err, c.want)
		}
	}
}

func TestEBNFDispatch(t *testing.T) {
	g, err := EBNF("# gbnf\nroot ::= \"a\"")
	if err != nil || g.Start != "root" {
		t.Fatalf("GBNF via EBNF: %v %v", g, err)
	}
	g, err = EBNF("// lark\nstart: \"a\"")
	if err != nil || g.Start != "start" {
		t.Fatalf("Lark via EBNF: %v %v", g, err)
	}
}

func FuzzGBNF(f *testing.F) {
	for _, s := range []string{jsonGBNF, arithGBNF, listGBNF, chessGBNF, "root ::= [^\\]]{2,}", "root ::= (\"a\" |\n", "root ::= \"\\u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := GBNF(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		checkIR(t, g)
	})
}
