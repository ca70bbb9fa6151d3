package clip

import (
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hell…"},
		{"héllo", 2, "h…"}, // é is two bytes: never split
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
		{"abc", 0, "…"},
		{"\xff\xfe\xfd\xfc\xfb\xfa", 3, "\xff\xfe\xfd…"}, // not UTF-8: cut at n
		{"a😀b", 4, "a…"},                                 // 😀 is 4 bytes
		{"😀😀", 3, "…"},                                   // no whole character fits
		{"日本語テキスト", 7, "日本…"},                            // 3 bytes each
		{"\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80…"},
	}
	for _, tt := range tests {
		if got := String(tt.s, tt.n); got != tt.want {
			t.Errorf("String(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if utf8.ValidString(tt.s) && !utf8.ValidString(String(tt.s, tt.n)) {
			t.Errorf("String(%q, %d) split a character", tt.s, tt.n)
		}
	}
}

func TestRunes(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hel…"},
		{"日本語です", 3, "日本…"},
		{"abc", 1, "…"},
	}
	for _, tt := range tests {
		if got := Runes(tt.s, tt.n); got != tt.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
