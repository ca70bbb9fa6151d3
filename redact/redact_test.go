package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
	tests := []struct{ in, want string }{
		{"my key is adaptbot_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA please", "my key is [redacted] please"},
		{"OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz012345", "OPENAI [redacted]"},
		{"sk-abcdefghijklmnop1234", "[redacted]"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "Authorization: Bearer [redacted]"},
		{"aws AKIAIOSFODNN7EXAMPLE id", "aws [redacted] id"},
		{"before " + pem + " after", "before [redacted] after"},
		{"cut -----BEGIN PRIVATE KEY-----\nMIIE", "cut [redacted]"},
		// Words that look alike are kept.
		{"ask-me anything; the bearer of news; adaptbot_ alone", "ask-me anything; the bearer of news; adaptbot_ alone"},
		{"2 + 3 * 4", "2 + 3 * 4"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSONStaysJSON(t *testing.T) {
	in := json.RawMessage(`{"text":"use adaptbot_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA","pem":"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----","n":1}`)
	out, changed := JSON(in)
	if !changed || !json.Valid(out) || strings.Contains(string(out), "Zm9vYmFy") || strings.Contains(string(out), "AAAA") {
		t.Fatalf("JSON(%s) = %s, %v", in, out, changed)
	}
	if out, changed := JSON(json.RawMessage(`{"expression":"2+2"}`)); changed || string(out) != `{"expression":"2+2"}` {
		t.Errorf("clean JSON changed: %s", out)
	}
}

func FuzzString(f *testing.F) {
	f.Add(`{"a":"adaptbot_Zm9vYmFyYmF6cXV4MTIz","b":"Bearer abcdefghij"}`)
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		if json.Valid([]byte(s)) {
			if o, _ := JSON(json.RawMessage(s)); !json.Valid(o) {
				t.Fatalf("JSON(%q) = %q, not JSON", s, o)
			}
		}
		if String(out) != out {
			t.Fatalf("String is not idempotent on %q: %q", s, out)
		}
	})
}
