// This file has the string formats the compiler enforces (regexes that accept only valid
// values: a subset where the full definition is not regular) and length bounds of patterns.

package grammar

import (
	"regexp"
	"regexp/syntax"
	"unicode"
)

const (
	reYear    = `[0-9]{4}`
	reLeap    = `(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)`
	reMD      = `(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))`
	reDate    = `(?:` + reYear + `-` + reMD + `|` + reLeap + `-02-29)`
	reTime    = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	reOctet   = `(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	reIPv4    = reOctet + `(?:\.` + reOctet + `){3}`
	reH16     = `[0-9a-fA-F]{1,4}`
	reLabel   = `[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?`
	reUnres   = `A-Za-z0-9\-._~`
	reSubD    = `!$&'()*+,;=`
	rePct     = `%[0-9A-Fa-f]{2}`
	rePchar   = `(?:[` + reUnres + reSubD + `:@]|` + rePct + `)`
	reQuery   = `(?:[` + reUnres + reSubD + `:@/?]|` + rePct + `)*`
	reHost    = `(?:[` + reUnres + reSubD + `]|` + rePct + `)*`
	reURI     = `[A-Za-z][A-Za-z0-9+.\-]*:(?://(?:(?:[` + reUnres + reSubD + `:]|` + rePct + `)*@)?` + reHost + `(?::[0-9]*)?(?:/` + rePchar + `*)*|/?(?:` + rePchar + `+(?:/` + rePchar + `*)*)?)(?:\?` + reQuery + `)?(?:#` + reQuery + `)?`
	reDurTime = `T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)`
)

// ipv6: the RFC 4291 text forms, built from the number of groups before and after "::".
func ipv6Re() string {
	h := reH16
	alts := []string{`(?:` + h + `:){7}` + h, `(?:` + h + `:){6}` + reIPv4}
	for before := 0; before <= 7; before++ {
		for after := 0; before+after <= 7; after++ {
			pre := ""
			if before > 0 {
				pre = `(?:` + h + `:){` + itoa(before-1) + `}` + h
			}
			post := ""
			if after > 0 {
				post = `(?:` + h + `:){` + itoa(after-1) + `}` + h
			}
			alts = append(alts, pre+`::`+post)
			if before+after <= 5 && after > 0 {
				alts = append(alts, pre+`::(?:`+h+`:){`+itoa(after-1)+`}`+reIPv4)
			} else if after == 0 && before <= 5 {
				alts = append(alts, pre+`::`+reIPv4)
			}
		}
	}
	s := ""
	for i, a := range alts {
		if i > 0 {
			s += "|"
		}
		s += a
	}
	return `(?:` + s + `)`
}

var formatRes = map[string]string{
	"date-time": reDate + `T` + reTime,
	"date":      reDate,
	"time":      reTime,
	// email: a subset short enough for every validator's limits (local part <= 64
	// characters, address <= 254): up to 64 + 1 + 2*64 + 24 = 217 characters.
	"email": `[A-Za-z0-9_+\-]{1,32}(?:\.[A-Za-z0-9_+\-]{1,31})?@(?:` + reLabel + `\.){1,2}` +
		`[A-Za-z0-9](?:[A-Za-z0-9-]{0,22}[A-Za-z0-9])?`,
	"uuid":     `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"uri":      reURI,
	"ipv4":     reIPv4,
	"ipv6":     ipv6Re(),
	"hostname": reLabel + `(?:\.` + reLabel + `){0,3}`,
	"duration": `P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?)(?:` + reDurTime + `)?|` + reDurTime + `|[0-9]+W)`,
}

// Formats whose full definition is not written here but whose validators reject strings:
// each gets a regex for a subset of its valid values.
func init() {
	relPart := `(?:[` + reUnres + reSubD + `@]|` + rePct + `)`
	relRef := `(?:/?` + relPart + `+(?:/` + rePchar + `*)*|/)?(?:\?` + reQuery + `)?(?:#` + reQuery + `)?`
	formatRes["uri-reference"] = `(?:` + reURI + `|` + relRef + `)`
	formatRes["uri-template"] = formatRes["uri-reference"]
	formatRes["iri"] = reURI
	formatRes["iri-reference"] = formatRes["uri-reference"]
	formatRes["idn-email"] = formatRes["email"]
	formatRes["idn-hostname"] = formatRes["hostname"]
	formatRes["host-name"] = formatRes["hostname"]
	formatRes["ip-address"] = reIPv4
	formatRes["json-pointer"] = `(?:/(?:[^~/"\\\x00-\x1f]|~[01])*)*`
	formatRes["relative-json-pointer"] = `(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/"\\\x00-\x1f]|~[01])*)*)`
	// regex: a subset of the regexes every engine accepts (no groups or alternation).
	reAtom := `(?:[A-Za-z0-9 _\-@#%&=:;,'<>/!~]|\.|\\\\[dDwWsS.\-/^$*+?()\[\]{}|]|\[\^?(?:a-z|A-Z|0-9|[A-Za-z0-9 _.]|\\\\[dws])+\])`
	pairs := "" // {n,m} with n <= m: one digit each, or m longer than n
	for n := 0; n <= 9; n++ {
		pairs += "|" + itoa(n) + ",[" + itoa(n) + "-9]"
	}
	reQuant := `(?:[*+?]|\{(?:[0-9]{1,3},?|[0-9],[1-9][0-9]{1,2}|[1-9][0-9],[1-9][0-9]{2}` + pairs + `)\})`
	formatRes["regex"] = `\^?(?:` + reAtom + reQuant + `?)*\$?`
	formatRes["color"] = `#[0-9a-fA-F]{6}`
}

var formats = formatRes

var formatCache = map[string]*regexp.Regexp{}

func formatRegexp(f string) *regexp.Regexp {
	if re, ok := formatCache[f]; ok {
		return re
	}
	re := regexp.MustCompile(`^(?:` + formatRes[f] + `)$`)
	formatCache[f] = re
	return re
}

func unicodeFold(r rune) rune { return unicode.SimpleFold(r) }

// regexLengths bounds the length (in characters) of the strings a Go regex matches whole.
func regexLengths(g string) (int, int) {
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return 0, -1
	}
	return lengths(re)
}

// patternLengths bounds the length of the strings an ECMAScript pattern accepts (searching):
// exact bounds only when the pattern is anchored at both ends.
func patternLengths(p string) (int, int) {
	g, err := ecmaToGo(p)
	if err != nil {
		return 0, -1
	}
	re, err := syntax.Parse(g, syntax.Perl)
	if err != nil {
		return 0, -1
	}
	lo, hi := lengths(re)
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText || re.Sub[len(re.Sub)-1].Op != syntax.OpEndText {
		hi = -1
	}
	return lo, hi
}

func lengths(re *syntax.Regexp) (int, int) {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune), len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1
	case syntax.OpCapture:
		return lengths(re.Sub[0])
	case syntax.OpConcat:
		lo, hi := 0, 0
		for _, s := range re.Sub {
			a, b := lengths(s)
			lo += a
			if hi >= 0 && b >= 0 {
				hi += b
			} else {
				hi = -1
			}
		}
		return lo, hi
	case syntax.OpAlternate:
		lo, hi := -1, 0
		for _, s := range re.Sub {
			a, b := lengths(s)
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && b >= 0 {
				hi = max(hi, b)
			} else {
				hi = -1
			}
		}
		return max(lo, 0), hi
	case syntax.OpStar:
		return 0, -1
	case syntax.OpPlus:
		a, _ := lengths(re.Sub[0])
		return a, -1
	case syntax.OpQuest:
		_, b := lengths(re.Sub[0])
		return 0, b
	case syntax.OpRepeat:
		a, b := lengths(re.Sub[0])
		hi := -1
		if re.Max >= 0 && b >= 0 {
			hi = b * re.Max
		}
		return a * re.Min, hi
	case syntax.OpNoMatch:
		return 1 << 30, 0
	}
	return 0, 0
}
