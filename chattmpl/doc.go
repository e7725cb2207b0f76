// This file documents where the renderer follows @huggingface/jinja rather than Python Jinja,
// and where it deliberately differs from the reference.
//
// Following the reference (byte-identical goldens in testdata/golden):
//   - {{ true }} prints "true", {{ none }} prints "", lists/dicts print as JSON, integral floats
//     print "1.0" but serialize as 1 in tojson.
//   - str.strip/lstrip/rstrip ignore their chars argument and strip whitespace (so Qwen3's
//     strip('\n') also strips spaces); title() and capitalize() leave other letters' case alone.
//   - == is JavaScript loose equality (1 == '1', none == undefined); `in` on lists is strict;
//     % truncates (-7 % 3 == -1); < > <= >= only compare numbers; lists/dicts compare by identity.
//   - Filter/test precedence: filters bind tighter than `is`, which binds tighter than ** * +.
//   - strftime_now supports %Y %m %d %b %B %H %M %% in English.
//
// Deliberate differences (the reference throws; we render):
//   - filters select, reject, map('filter'), count, min, max, sum, round, wordcount, batch, d,
//     bare `default`, items of none, `list` of a dict/string; tests with arguments
//     (x is divisibleby(3)), float, sameas, ne, gt/ge/lt/le, in.
//   - a tuple prints like a list; `first`/`last` of an empty list are undefined.
//
// Other differences: integers are int64 (the reference uses float64 numbers); Go map values are
// given sorted keys (pass *Map to control order), while the reference, via JavaScript objects,
// puts integer-like keys first; range() is capped at 100000 items and macro recursion at 200.
package chattmpl
