// Package redact removes secrets from text before it is stored: benchmark
// rows, traces, failure cases and logs all pass what a person or a tool
// wrote through String first, so a key pasted into a chat is not kept in
// clear. It is a leaf: it imports only the standard library, and it must
// never log or keep what it removes.
package redact

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Mask replaces each secret found.
const Mask = "[redacted]"

// patterns are the shapes of secrets: AdaptBot's own keys (users.KeyPrefix
// "adaptbot_" and base64url), OpenAI-style keys (sk-..., sk-proj-...),
// bearer tokens, AWS access key IDs and PEM private key blocks. None of
// them matches a double quote, so redacting JSON text keeps it JSON.
var patterns = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[^"]*?(-----END[A-Z0-9 ]*PRIVATE KEY-----|$)`), Mask},
	{regexp.MustCompile(`adaptbot_[A-Za-z0-9_-]{8,}`), Mask},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), Mask},
	{regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}`), "${1}${2}" + Mask},
	{regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), Mask},
}

// hints are cheap substring checks: text holding none of them is returned
// as it is without running a regular expression.
var hints = []string{"PRIVATE KEY", "adaptbot_", "sk-", "earer", "EARER", "AKIA", "ASIA"}

// String returns s with every secret replaced by Mask.
func String(s string) string {
	if !maybe(s) {
		return s
	}
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}

// JSON returns raw (JSON text) with secrets in its strings replaced by
// Mask, and whether anything was. The result is still valid JSON when raw
// was: no pattern matches a quote, and Mask needs no escaping.
func JSON(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) == 0 || !maybe(string(raw)) {
		return raw, false
	}
	out := String(string(raw))
	if out == string(raw) {
		return raw, false
	}
	if json.Valid(raw) && !json.Valid([]byte(out)) {
		// Cannot happen with the patterns above; keep nothing rather than
		// the secret if it ever does.
		b, _ := json.Marshal(Mask)
		return b, true
	}
	return json.RawMessage(out), true
}

func maybe(s string) bool {
	for _, h := range hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}
