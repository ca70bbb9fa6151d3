package benchmarks

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxText is how many characters of a query or an error message a row keeps.
// Longer text is cut and marked, so one pasted document does not make a row
// that spreadsheets refuse (Excel stops at 32,767 characters a cell) or that
// drowns every other row in a terminal.
const MaxText = 2000

// Clean makes text safe to write into the CSV and to print. Tab and newline
// stay (CSV quotes them, and queries hold them); a carriage return before a
// newline is dropped, as encoding/csv would on reading; every other control
// character is written as a visible escape: C0 and DEL as \xNN (so ESC, the
// start of terminal escape sequences, reads \x1b, and NUL, which stops some
// C readers, reads \x00), C1 as \u0080..\u009f. Bytes that are not UTF-8
// are written as \xNN too, since DuckDB and pandas (by default) refuse a file
// with invalid UTF-8. A backslash is left as it is, so the escapes are for
// reading, not a reversible encoding.
func Clean(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// dropped: \r\n reads back as \n anyway
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether Clean would return s unchanged, without allocating.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return cleanRunes(s[i:])
		}
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			return false
		}
	}
	return true
}

func cleanRunes(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

// cutMarker matches the marker Cut adds.
var cutMarker = regexp.MustCompile(`…\[cut, \d+ bytes\]$`)

// Cut keeps the first max characters of s and, if it dropped any, adds a
// marker with the full length: "…[cut, 48213 bytes]". It never splits a
// character. Text Cut already shortened is left as it is, so rows read back
// and written again (an export) keep the original length in their marker.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s // fewer bytes than max means fewer characters too
	}
	if loc := cutMarker.FindStringIndex(s); loc != nil && utf8.RuneCountInString(s[:loc[0]]) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + fmt.Sprintf("…[cut, %d bytes]", len(s))
		}
		n++
	}
	return s
}
