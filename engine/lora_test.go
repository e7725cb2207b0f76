package engine

import "testing"

// TestAdapterSalt: the prefix-cache key of (salt, adapter) is one-to-one, so no salt makes one
// adapter's (or the base model's) blocks match another's.
func TestAdapterSalt(t *testing.T) {
	seen := map[string][2]any{}
	for _, salt := range []string{"", "x", "\xff1\xff", "\xff0\xff", "\xff1\xffx", "1"} {
		for _, a := range []uint32{0, 1, 2, 10} {
			k := adapterSalt(salt, a)
			if prev, ok := seen[k]; ok {
				t.Fatalf("salt %q adapter %d and salt %q adapter %d share the key %q", salt, a, prev[0], prev[1], k)
			}
			seen[k] = [2]any{salt, a}
		}
	}
	if adapterSalt("abc", 0) != "abc" {
		t.Error("the base model's key is not its salt")
	}
}
