// Package clip shapes text for people to read: it shortens a trace's tool
// output, an error that quotes a model's reply, a log line, and it is the
// one place that cuts text, so that no cut ever splits a UTF-8 character;
// Plural gives a count its word.
package clip

import "unicode/utf8"

// Marker ends every clipped text.
const Marker = "…"

// String returns s if it has at most n bytes; otherwise its first n bytes
// or fewer, never splitting a character, followed by Marker. Text that is
// not UTF-8 is cut at n.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Marker
}

// Prefix returns s's first n bytes or fewer, never splitting a character,
// and no marker: for text that goes on in words of its own ("… [output
// truncated]"), or a marker that says more. Text that is not UTF-8 is cut
// at n.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// Runes returns s if it has at most n characters; otherwise its first n-1
// characters followed by Marker, so that the result has n characters: for
// columns of a fixed width.
func Runes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return Marker
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + Marker
}

// Plural is "s" unless n is 1, for the words people read:
// fmt.Sprintf("%d case%s", n, clip.Plural(n)).
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
