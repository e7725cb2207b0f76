// This file resolves the URI references $id and $ref use (RFC 3986, the parts schemas use).

package grammar

import (
	"net/url"
	"strings"
)

// resolveURI resolves ref against base; unparsable input is returned as written.
func resolveURI(base, ref string) string {
	if base == "" {
		return ref
	}
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

func unescapeURI(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
