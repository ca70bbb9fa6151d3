package router

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Stopword reports whether w (lower case) is on the stop list, which the
// evaluation's baselines share.
func Stopword(w string) bool { return stopwords[w] }

// stopwords are common English function words (the usual IR stop list). They
// carry no routing signal and would otherwise match every description.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be
	because been before being below between both but by can could did do does doing down during each
	few for from further had has have having he her here hers herself him himself his how i if in into
	is it its itself just me more most my myself no nor not of off on once only or other our ours
	ourselves out over own same she should so some such than that the their theirs them themselves
	then there these they this those through to too under until up very was we were what when where
	which while who whom why will with would you your yours yourself yourselves`) {
		m[w] = true
	}
	return m
}()

// tokens turns text into index terms: words are split at separators and at
// camelCase boundaries, lower-cased, stripped of stop words and stemmed; a
// camelCase word also yields its joined form ("PowerPoint" gives "power",
// "point" and "powerpoint") so that either spelling matches. Runs of CJK
// characters yield overlapping bigrams (a lone character yields itself),
// which index Chinese and Japanese text without a dictionary.
func tokens(text string) []string {
	return appendTokens(nil, text, 0)
}

// appendTokens appends the terms of text to dst, stopping once dst holds
// limit terms when limit is positive.
func appendTokens(dst []string, text string, limit int) []string {
	i := 0
	for i < len(text) && (limit <= 0 || len(dst) < limit) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case isCJK(r):
			j := i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isCJK(r2) {
					break
				}
				j += s2
			}
			dst = appendCJK(dst, text[i:j])
			i = j
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if isCJK(r2) || !(unicode.IsLetter(r2) || unicode.IsDigit(r2) || unicode.IsMark(r2)) {
					break
				}
				j += s2
			}
			dst = appendWord(dst, text[i:j])
			i = j
		default:
			i += size
		}
	}
	return dst
}

// isCJK reports whether r is written without spaces between words.
func isCJK(r rune) bool {
	return r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r))
}

// appendCJK appends the character bigrams of a CJK run.
func appendCJK(dst []string, run string) []string {
	first, size := utf8.DecodeRuneInString(run)
	if size == len(run) {
		return append(dst, string(first))
	}
	prev := 0
	for i := range run {
		if i == 0 {
			continue
		}
		_, s := utf8.DecodeRuneInString(run[i:])
		dst = append(dst, run[prev:i+s])
		prev = i
	}
	return dst
}

// maxWordLen is the longest alphanumeric run taken for a word. Longer runs
// are data pasted into a request (base64, hashes, minified code): splitting
// them at case changes would make thousands of meaningless terms.
const maxWordLen = 64

// appendWord appends the terms of one alphanumeric run, splitting it at
// camelCase boundaries: "getHTTPResponse" gives "get", "http", "respons".
func appendWord(dst []string, w string) []string {
	if len(w) > maxWordLen {
		return dst
	}
	parts := splitCamel(w)
	for _, p := range parts {
		dst = appendTerm(dst, p)
	}
	if len(parts) > 1 {
		dst = appendTerm(dst, w)
	}
	return dst
}

// isLowerASCII reports whether s holds no upper-case or non-ASCII letters.
func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// appendTerm lower-cases, filters and stems one word.
func appendTerm(dst []string, w string) []string {
	if !isLowerASCII(w) {
		w = strings.ToLower(w)
	}
	if stopwords[w] {
		return dst
	}
	if utf8.RuneCountInString(w) < 2 {
		// A lone letter or digit matches too much to rank anything.
		return dst
	}
	return append(dst, stem(w))
}

// splitCamel splits w where the case changes: before an upper-case letter that
// follows a lower-case letter or a digit, and before the last capital of a run
// of capitals followed by a lower-case letter ("HTTPServer" → "HTTP", "Server").
func splitCamel(w string) []string {
	if isLowerASCII(w[1:]) {
		return []string{w}
	}
	var parts []string
	runes := []rune(w)
	start := 0
	for i := 1; i < len(runes); i++ {
		prev, cur := runes[i-1], runes[i]
		boundary := unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
		if !boundary && unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(runes) && unicode.IsLower(runes[i+1]) {
			boundary = true
		}
		if boundary {
			parts = append(parts, string(runes[start:i]))
			start = i
		}
	}
	return append(parts, string(runes[start:]))
}
