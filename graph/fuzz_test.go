package graph

import "testing"

// FuzzParse: Parse never panics, and what it accepts prints to text that parses to the same
// text again.
func FuzzParse(f *testing.F) {
	f.Add(String(tinyBlock(f)))
	f.Add("graph g {\n input %x: f32[n,4]\n %y: f32[n,4] = silu(%x)\n output %y\n}\n")
	f.Add("graph g {\n input %x: f32[2]\n %y: f32[2] = scale(%x) {by=2}\n output %y\n}")
	f.Fuzz(func(t *testing.T, text string) {
		g, err := Parse(text)
		if err != nil {
			return
		}
		out := String(g)
		g2, err := Parse(out)
		if err != nil {
			t.Fatalf("printed graph does not parse: %v\n%s", err, out)
		}
		if String(g2) != out {
			t.Fatalf("second round trip differs:\n%s\nvs\n%s", String(g2), out)
		}
	})
}
