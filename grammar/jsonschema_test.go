// Tests for JSONSchema: schemas with instances that must and must not match (checked with
// the reference recognizer), error messages, and a fuzz test.

package grammar

import (
	"strings"
	"testing"
)

type schemaCase struct {
	schema string
	good   []string
	bad    []string
}

var schemaCases = []schemaCase{
	{`{}`, []string{`1`, `"a"`, `{"a":[1,{"b":null}]}`, `[]`, `-1.5e3`}, []string{`{a}`, `01`, ` 1`}},
	{`true`, []string{`null`}, []string{``}},
	{`{"type":"integer"}`, []string{`0`, `-12`, `123456789012345678901`}, []string{`1.5`, `"1"`, `01`, `-`, `1e3`}},
	{`{"type":["string","null"]}`, []string{`null`, `"x"`, `"\u00e9\n"`, `"\ud83d\ude00"`}, []string{`1`, `"\x"`, `"\ud83d"`}},
	{`{"type":"integer","minimum":-15,"maximum":120}`,
		[]string{`-15`, `-9`, `0`, `9`, `99`, `100`, `119`, `120`}, []string{`-16`, `-100`, `121`, `200`, `1000`}},
	{`{"type":"integer","exclusiveMinimum":0}`, []string{`1`, `10`, `999999`}, []string{`0`, `-1`}},
	{`{"type":"integer","minimum":5,"exclusiveMinimum":true,"maximum":1000}`, []string{`6`, `1000`, `99`}, []string{`5`, `1001`, `4`}},
	{`{"type":"number","minimum":0.5,"exclusiveMaximum":2.25}`,
		[]string{`0.5`, `0.50`, `0.6`, `1`, `1.999`, `2`, `2.2`, `2.249999`}, []string{`0.4999`, `0`, `2.25`, `2.250`, `2.3`, `3`, `-1`}},
	{`{"type":"number","maximum":-1.5}`, []string{`-1.5`, `-2`, `-100.25`}, []string{`-1.4`, `-1`, `0`, `5`}},
	{`{"type":"number","exclusiveMinimum":-1,"maximum":0}`, []string{`-0.5`, `0`, `-0.999`, `0.0`}, []string{`-1`, `-1.0`, `0.1`, `-2`}},
	{`{"type":"integer","multipleOf":3}`, []string{`0`, `3`, `-9`, `123`}, []string{`1`, `10`, `-4`}},
	{`{"type":"integer","minimum":0,"maximum":20,"multipleOf":5}`, []string{`0`, `5`, `20`}, []string{`25`, `3`, `-5`}},
	{`{"type":"integer","minimum":-2032,"maximum":2031,"multipleOf":16}`, []string{`-2032`, `0`, `16`, `2016`}, []string{`2032`, `-2048`, `8`}},
	{`{"type":"number","multipleOf":0.01}`, []string{`1`, `1.5`, `1.25`, `1.250`}, []string{`1.255`}},
	{`{"type":"string","minLength":2,"maxLength":3}`, []string{`"ab"`, `"a\nb"`, `"é€😀"`, `"\ud83d\ude00x"`}, []string{`"a"`, `"abcd"`, `""`}},
	{`{"type":"string","maxLength":2000}`, []string{`"x"`, `""`}, []string{`1`}},
	{`{"type":"string","pattern":"^[a-z]+\\d$"}`, []string{`"abc1"`}, []string{`"abc"`, `"Abc1"`, `"abc12"`}},
	{`{"type":"string","pattern":"a\"b"}`, []string{`"xa\"by"`}, []string{`"ab"`, `"a\\b"`}},
	{`{"type":"string","pattern":"^\\s$"}`, []string{`" "`, `"\t"`, `"\n"`}, []string{`"x"`, `""`}},
	{`{"type":"string","pattern":"^a.c$"}`, []string{`"abc"`, `"a\"c"`}, []string{`"a\nc"`, `"ac"`}},
	{`{"type":"string","pattern":"^[a-z]{2}$","maxLength":5}`, []string{`"ab"`}, []string{`"abc"`}},
	{`{"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":3}`, []string{`"ab"`, `"abc"`}, []string{`"a"`, `"abcd"`, `"ab1"`}},
	{`{"type":"string","pattern":"^([\\w-]|[\\w-][\\w/-]*[\\w-])$","maxLength":4}`, []string{`"a"`, `"a/-b"`}, []string{`"a/-bc"`, `"a/"`, `""`}},
	{`{"type":"string","pattern":"^(?:\\S+\\s+){0,9}\\S+$","maxLength":8}`, []string{`"a b"`}, []string{`"abcdefghi"`, `"ab  cd  ef"`, `" ab"`}},
	{`{"type":"string","pattern":"[0-9]","minLength":1,"maxLength":4}`, []string{`"a1"`, `"1b"`, `"\"1"`, `"1"`}, []string{`"abcd1"`, `"ab"`}},
	{`{"type":"string","format":"email","maxLength":100}`, []string{`"a@b.com"`}, []string{`"a.com"`}},
	{`{"type":"string","format":"date"}`, []string{`"2024-02-29"`, `"2023-12-31"`}, []string{`"2023-02-29"`, `"2023-13-01"`, `"2023-04-31"`, `"x"`}},
	{`{"type":"string","format":"date-time"}`, []string{`"2023-01-02T03:04:05Z"`, `"2023-01-02T03:04:05.123+05:30"`}, []string{`"2023-01-02 03:04:05"`, `"2023-01-02T24:00:00Z"`}},
	{`{"format":"ipv4"}`, []string{`"1.2.3.4"`, `"255.255.255.255"`, `5`}, []string{`"256.1.1.1"`, `"1.2.3"`, `"01.2.3.4"`}},
	{`{"format":"ipv6"}`, []string{`"::1"`, `"2001:db8::8a2e:370:7334"`, `"::ffff:1.2.3.4"`, `"1:2:3:4:5:6:7:8"`}, []string{`"1:2:3:4:5:6:7:8:9"`, `"1::2::3"`, `"g::"`}},
	{`{"format":"regex"}`, []string{`"^[a-zA-Z0-9_]{3,16}$"`, `"^\\d+\\.x*$"`, `"abc"`}, []string{`"[a-z"`, `"a{3,1}"`, `"(a"`, `"a**"`}},
	{`{"format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
	{`{"format":"email"}`, []string{`"a.b@example.com"`}, []string{`"a@b"`, `"@example.com"`}},
	{`{"format":"uri"}`, []string{`"https://example.com/a?b=c#d"`, `"urn:isbn:123"`}, []string{`"example.com"`, `"http://a b"`}},
	{`{"format":"duration"}`, []string{`"P3D"`, `"PT1H30M"`, `"P1Y2M3DT4H"`, `"P2W"`}, []string{`"P"`, `"PT"`, `"P1H"`, `"P1W2D"`}},
	{`{"format":"no-such-format","type":"string"}`, []string{`"anything"`}, nil},
	{`{"enum":["a",1,null,{"x":[true]}]}`, []string{`"a"`, `1`, `null`, `{"x":[true]}`}, []string{`"b"`, `2`, `{}`}},
	{`{"enum":[{"a":1},{"a":"x"},[1],[1,2,3]],"properties":{"a":{"type":"integer"}},"maxItems":2}`, []string{`{"a":1}`, `[1]`}, []string{`{"a":"x"}`, `[1,2,3]`}},
	{`{"minLength":3,"maxLength":2,"minimum":2,"maximum":1}`, []string{`null`, `true`, `[]`, `{}`}, []string{`"abc"`, `1`}},
	{`{"type":["string","boolean"],"not":{"enum":["a","ab",true]}}`, []string{`"b"`, `"abc"`, `""`, `false`}, []string{`"a"`, `"ab"`, `true`}},
	{`{"type":"object","not":{"anyOf":[{"required":["a","b"]},{"required":["c"]}]}}`, []string{`{}`, `{"a":1}`, `{"b":1}`}, []string{`{"a":1,"b":2}`, `{"c":1}`}},
	{`{"type":"object","oneOf":[{"properties":{"t":{"enum":["a"]},"v":{"type":"string"}}},{"properties":{"t":{"enum":["b","c"]},"v":{"type":["string","null"]}}}]}`,
		[]string{`{"t":"a","v":"x"}`, `{"t":"b","v":null}`, `{"t":"c"}`, `{"v":null}`}, []string{`{}`, `{"t":"a","v":null}`, `{"v":"x"}`, `{"t":"d"}`}},
	{`{"type":"array","items":{"type":"integer"},"contains":{"minimum":5}}`, []string{`[5]`, `[1,7]`, `[6,1,2]`}, []string{`[]`, `[1,2]`, `[5,"a"]`}},
	{`{"id":"a.json","definitions":{"x":{"id":"#/definitions/x","properties":{"p":{"$ref":"#/definitions/y"}}},"y":{"type":"string"}},"$ref":"#/definitions/x"}`,
		[]string{`{"p":"s"}`}, []string{`{"p":1}`}},
	{`{"type":"integer","allOf":[{"multipleOf":4},{"multipleOf":6}]}`, []string{`12`, `24`, `0`}, []string{`4`, `6`, `18`}},
	{`{"const":1.0}`, []string{`1.0`, `1`}, []string{`2`}},
	{`{"type":"string","enum":["a","bb",3],"maxLength":1}`, []string{`"a"`}, []string{`"bb"`, `3`}},
	{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}`,
		[]string{`{"b":"x"}`, `{"a":1,"b":"x"}`}, []string{`{}`, `{"a":1}`, `{"b":"x","c":1}`, `{"a":"1","b":"x"}`, `{"b":"x","a":1}`}},
	{`{"properties":{"a":{"type":"integer"}}}`,
		[]string{`{}`, `{"a":1}`, `{"a":1,"c":[1]}`, `{"c":2}`, `"not an object"`}, []string{`{"a":"x"}`, `{"c":2,"a":"x"}`}},
	{`{"type":"object","additionalProperties":{"type":"integer"},"minProperties":1,"maxProperties":2}`,
		[]string{`{"a":1}`, `{"a":1,"b":2}`}, []string{`{}`, `{"a":1,"b":2,"c":3}`, `{"a":"x"}`}},
	{`{"type":"object","properties":{"a":{},"b":{}},"maxProperties":1}`, []string{`{}`, `{"a":1}`, `{"b":1}`}, []string{`{"a":1,"b":2}`}},
	{`{"type":"object","patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`,
		[]string{`{"x-a":1}`, `{}`}, []string{`{"y":1}`, `{"x-a":"s"}`}},
	{`{"type":"object","properties":{"x-a":{"description":"d"},"b":{}},"patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`,
		[]string{`{"x-a":1}`, `{"b":"s","x-c":2}`}, []string{`{"x-a":"s"}`, `{"c":1}`, `{"x-c":"s"}`}},
	{`{"type":"object","propertyNames":{"pattern":"^[a-z]+$","maxLength":3},"additionalProperties":{"type":"integer"},"properties":{"Big":{}}}`,
		[]string{`{}`, `{"ab":1,"c":2}`}, []string{`{"abcd":1}`, `{"Big":1}`, `{"ab":"x"}`}},
	{`{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x":{"type":"integer"}}}`,
		[]string{`{"a":"s"}`, `{"a":"s","xb":1}`, `{"y":2}`}, []string{`{"a":1}`, `{"xb":"s"}`}},
	{`{"type":"object","patternProperties":{"^n:":{"type":"string"},"^c:":{"type":"integer"},"x":{"minimum":0}},"additionalProperties":false}`,
		[]string{`{"n:a":"s","c:b":1}`, `{"c:x":2}`}, []string{`{"n:a":1}`, `{"c:a":"s"}`, `{"c:x":-1}`, `{"y":1}`}},
	{`{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3}`, []string{`[1]`, `[1,2,3]`}, []string{`[]`, `[1,2,3,4]`, `["a"]`}},
	{`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`,
		[]string{`[]`, `["a"]`, `["a",1]`}, []string{`[1]`, `["a",1,2]`}},
	{`{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"boolean"},"minItems":2}`,
		[]string{`["a",true]`, `["a",true,false]`}, []string{`["a"]`, `["a",1]`}},
	{`{"type":"array","uniqueItems":true,"items":{"enum":["a","b",1]},"minItems":1}`,
		[]string{`["a"]`, `["b","a"]`, `["a",1,"b"]`}, []string{`[]`, `["a","a"]`, `["a",1,"a"]`, `["c"]`}},
	{`{"type":"array","uniqueItems":true,"items":{"type":"boolean"}}`, []string{`[]`, `[true,false]`}, []string{`[true,true]`}},
	{`{"type":"array","uniqueItems":true,"maxItems":1}`, []string{`[]`, `[1]`}, []string{`[1,1]`}},
	{`{"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]}`, []string{`1`, `"a"`}, []string{`"ab"`, `null`}},
	{`{"oneOf":[{"type":"integer"},{"type":"string"}]}`, []string{`1`, `"a"`}, []string{`null`}},
	{`{"oneOf":[{"properties":{"k":{"const":"a"},"x":{"type":"integer"}},"required":["k"]},{"properties":{"k":{"const":"b"}},"required":["k"]}],"type":"object"}`,
		[]string{`{"k":"a","x":1}`, `{"k":"b","x":"s"}`}, []string{`{"k":"a","x":"s"}`, `{"k":"c"}`, `{}`}},
	{`{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}`, []string{`{"a":1}`, `{"b":1}`}, []string{`{}`, `{"a":1,"b":2}`, `1`}},
	{`{"oneOf":[{"enum":["a","b"]},{"type":"string","pattern":"^x"},{"anyOf":[{"type":"integer"},{"type":"null"}]}]}`,
		[]string{`"a"`, `"xa"`, `1`, `null`}, []string{`"c"`, `1.5`}},
	{`{"type":"integer","not":{"minimum":3}}`, []string{`2`, `-5`}, []string{`3`, `4`}},
	{`{"not":{"type":"string","minLength":2}}`, []string{`1`, `"a"`, `""`, `null`}, []string{`"ab"`}},
	{`{"type":"object","properties":{"a":{"type":"integer"}},"not":{"properties":{"a":{"maximum":5}},"required":["a"]}}`,
		[]string{`{}`, `{"a":6}`}, []string{`{"a":5}`, `{"a":1}`}},
	{`{"type":"string","if":{"maxLength":2},"then":{"pattern":"^a"},"else":{"pattern":"^b"}}`, []string{`"ax"`, `"bxx"`}, []string{`"bx"`, `"axx"`}},
	{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, []string{`1.5`}, []string{`1`, `"a"`}},
	{`{"type":"object","properties":{"a":{},"b":{},"c":{}},"dependencies":{"a":["b"],"c":{"required":["a"]}}}`,
		[]string{`{}`, `{"b":1}`, `{"a":1,"b":2}`, `{"a":1,"b":2,"c":3}`}, []string{`{"a":1}`, `{"c":1}`, `{"b":1,"c":1}`}},
	{`{"type":"object","properties":{"t":{"enum":["a","b"]},"x":{}},"if":{"properties":{"t":{"const":"a"}}},"then":{"required":["x"]},"else":{"properties":{"x":{"type":"integer"}}}}`,
		[]string{`{"t":"a","x":"s"}`, `{"t":"b"}`, `{"t":"b","x":1}`, `{"x":"s"}`}, []string{`{"t":"a"}`, `{"t":"b","x":"s"}`, `{}`}},
	{`{"if":{"type":"object","required":["a"]},"then":{"required":["b"]},"else":{"type":"string"}}`,
		[]string{`{"a":1,"b":2}`, `"s"`}, []string{`{"a":1}`, `{}`, `1`}},
	{`{"type":"array","if":{"minItems":2},"then":{"items":{"type":"integer"}}}`, []string{`[]`, `["a"]`, `[1,2]`}, []string{`["a","b"]`}},
	{`{"allOf":[{"type":["integer","string"]},{"type":"integer","minimum":3},{"maximum":5}]}`, []string{`3`, `5`}, []string{`2`, `6`, `"a"`}},
	{`{"allOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"string"}}}],"type":"object"}`,
		[]string{`{"a":1}`, `{"a":1,"b":"x"}`}, []string{`{"b":"x"}`, `{"a":1,"b":2}`}},
	{`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/n"}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
		[]string{`{"v":1}`, `{"v":1,"next":{"v":2,"next":{"v":3}}}`}, []string{`{"v":1,"next":{}}`, `{"next":{"v":1}}`}},
	{`{"definitions":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/a"}},"type":"object"}`, []string{`{"x":"s"}`}, []string{`{"x":1}`}},
	{`{"$id":"http://x.org/root.json","definitions":{"a":{"$id":"a.json","type":"integer"}},"properties":{"x":{"$ref":"a.json"},"y":{"$ref":"http://x.org/a.json"}},"type":"object"}`,
		[]string{`{"x":1,"y":2}`}, []string{`{"x":"s"}`, `{"y":"s"}`}},
	{`{"type":["integer","string"],"not":{"type":"string"}}`, []string{`1`}, []string{`"a"`}},
	{`{"not":{"not":{"type":"integer"}}}`, []string{`1`}, []string{`"a"`, `1.5`}},
	{`{"not":{"anyOf":[{"type":"integer"},{"type":"null"}]}}`, []string{`"a"`, `1.5`, `{}`}, []string{`1`, `null`}},
	{`{"properties":{"a":{}},"not":{"required":["a"]}}`, []string{`{}`, `{"b":1}`}, []string{`{"a":1}`, `1`, `"x"`}},
	{`{"type":"string","enum":["a","b"],"not":{"const":"a"}}`, []string{`"b"`}, []string{`"a"`}},
	{`{"type":"object","properties":{"a\"b":{"type":"null"}}}`, []string{`{"a\"b":null}`, `{"a":1}`}, []string{`{"a\"b":1}`}},
}

func TestJSONSchemaCases(t *testing.T) {
	for _, tc := range schemaCases {
		g, err := JSONSchema([]byte(tc.schema), SchemaOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		for _, s := range tc.good {
			if !g.Match([]byte(s)) {
				t.Errorf("%s: rejects %s", tc.schema, s)
			}
		}
		for _, s := range tc.bad {
			if g.Match([]byte(s)) {
				t.Errorf("%s: accepts %s", tc.schema, s)
			}
		}
	}
}

func TestJSONSchemaWhitespace(t *testing.T) {
	schema := `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`
	g, err := JSONSchema([]byte(schema), SchemaOptions{Whitespace: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`{"a":[1,2]}`, "{ \"a\" : [ 1 ,\n 2 ] }", `{}`, `{ }`} {
		if !g.Match([]byte(s)) {
			t.Errorf("rejects %q", s)
		}
	}
	if g.Match([]byte(`{"a":[1, "x"]}`)) {
		t.Error("accepts a string item")
	}
	compact, _ := JSONSchema([]byte(schema), SchemaOptions{})
	if compact.Match([]byte(`{ "a":[1]}`)) {
		t.Error("compact grammar accepts whitespace")
	}
}

func TestJSONSchemaErrors(t *testing.T) {
	for schema, want := range map[string]string{
		`[1]`: `must be an object or a boolean`,
		`{`:   `not JSON`,
		`{"type":"integer","minimum":5,"maximum":4}`:    `minimum/maximum`,
		`{"type":"string","minLength":5,"maxLength":4}`: `minLength/maxLength`,
		`{"enum":[]}`:                                                     `unsatisfiable`,
		`{"type":"string","enum":[1,2]}`:                                  `unsatisfiable`,
		`{"allOf":[{"type":"string"},{"type":"integer"}]}`:                `unsatisfiable`,
		`{"$ref":"#/definitions/missing"}`:                                `cannot resolve "#/definitions/missing"`,
		`{"type":"bogus"}`:                                                `unknown type`,
		`{"type":"array","uniqueItems":true}`:                             `unsupported keyword "uniqueItems" at #`,
		`{"properties":{"x":{"contains":{},"maxItems":3}}}`:               `unsupported keyword "contains" at #/properties/x`,
		`{"oneOf":[{"type":"integer"},{"type":"number","maximum":3}]}`:    `unsupported keyword "not" at # (non-integer numbers with bounds)`,
		`{"type":"string","pattern":"(?=a)"}`:                             `unsupported keyword "pattern"`,
		`{"if":{"type":"string","pattern":"a"},"then":{"maxLength":3}}`:   `unsupported keyword "if"`,
		`{"not":{"type":"string","pattern":"a"}}`:                         `unsupported keyword "not"`,
		`{"type":"string","pattern":"[0-9]","minLength":2,"maxLength":4}`: `unsupported keyword "maxLength"`,
		`{"type":"object","required":["a"],"properties":{"a":false}}`:     `unsatisfiable`,
		`{"properties":{"ab":{"minimum":5}},"patternProperties":{"b":{"maximum":7}},"additionalProperties":false}`: `unsupported keyword "patternProperties" at # (pattern matches a named property)`,
		`{"minLength":-1}`: `"minLength" must be a non-negative integer`,
	} {
		_, err := JSONSchema([]byte(schema), SchemaOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", schema, err, want)
		}
	}
	big := `{"type":"object","properties":{` + strings.Repeat(`"a":{"$ref":"#"},`, 1) + `"b":{"$ref":"#"}}}`
	if _, err := JSONSchema([]byte(big), SchemaOptions{MaxRules: 1}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("size limit: %v", err)
	}
}

func FuzzJSONSchema(f *testing.F) {
	for _, tc := range schemaCases {
		f.Add(tc.schema)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		g, err := JSONSchema([]byte(schema), SchemaOptions{})
		if err == nil {
			if g.Validate() != nil {
				t.Fatalf("invalid grammar for %s", schema)
			}
			g.Match([]byte(`{"a":[1,"x",null]}`))
		}
	})
}

// A $ref cycle that never reaches a schema describing a value is refused; a recursive schema
// that nests (a tree) and a diamond of refs are not cycles.
func TestJSONSchemaRefCycle(t *testing.T) {
	for _, bad := range []string{
		`{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}`,
		`{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}}`,
		`{"$ref": "#"}`,
	} {
		if _, err := JSONSchema([]byte(bad), SchemaOptions{}); err == nil || !strings.Contains(err.Error(), "cycle") {
			t.Errorf("%s: err %v, want a cycle error", bad, err)
		}
	}
	for _, good := range []string{
		`{"$defs": {"n": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}`,
		`{"$defs": {"s": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}]}`,
	} {
		if _, err := JSONSchema([]byte(good), SchemaOptions{}); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
}

// CloseObjects closes objects that list properties and say nothing of others; free-form
// objects and explicit additionalProperties keep their meaning.
func TestJSONSchemaCloseObjects(t *testing.T) {
	cases := []struct {
		schema     string
		doc        string
		open, shut bool // matched without / with CloseObjects
	}{
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1}`, true, true},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{}`, true, true},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1,"b":2}`, true, false},
		{`{"type":"object"}`, `{"b":2}`, true, true},
		{`{"type":"object","properties":{"a":{}},"additionalProperties":true}`, `{"a":1,"b":2}`, true, true},
		{`{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}}`, `{"a":1,"b":"x"}`, true, true},
		{`{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}}}`, `{"a":1,"xy":2}`, true, true},
	}
	for _, c := range cases {
		for _, closeObj := range []bool{false, true} {
			ir, err := JSONSchema([]byte(c.schema), SchemaOptions{CloseObjects: closeObj})
			if err != nil {
				t.Fatalf("%s: %v", c.schema, err)
			}
			want := c.open
			if closeObj {
				want = c.shut
			}
			if got := ir.Match([]byte(c.doc)); got != want {
				t.Errorf("%s (CloseObjects %v): Match(%s) = %v, want %v", c.schema, closeObj, c.doc, got, want)
			}
		}
	}
}
