package web

import (
	"testing"
)

// TestHostAndOriginRules checks the rules with the settings that widen them.
func TestHostAndOriginRules(t *testing.T) {
	s := &Server{opts: Options{Addr: "127.0.0.1:3000", Limits: Limits{AllowedHosts: []string{"bot.lan"}, AllowedOrigins: []string{"https://tools.example"}}}}
	for _, tt := range []struct {
		host, listen string
		want         bool
	}{
		{"127.0.0.1:3000", "127.0.0.1", true},
		{"localhost:3000", "127.0.0.1", true},
		{"[::1]:3000", "127.0.0.1", true},
		{"app.localhost", "127.0.0.1", true},
		{"localhost.:3000", "127.0.0.1", true},
		{"evil.example.", "127.0.0.1", false},
		{"bot.lan:3000", "127.0.0.1", true},
		{"BOT.LAN", "127.0.0.1", true},
		{"evil.example", "127.0.0.1", false},
		{"10.0.0.7:3000", "127.0.0.1", false},
		{"10.0.0.7:3000", "0.0.0.0", true},
		{"evil.example", "0.0.0.0", false},
		{"myhost:3000", "myhost", true},
		{"", "127.0.0.1", true},
	} {
		if got := s.hostAllowed(tt.host, tt.listen); got != tt.want {
			t.Errorf("hostAllowed(%q, listen %q) = %v", tt.host, tt.listen, got)
		}
	}
	for _, tt := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:3000", "127.0.0.1:3000", true},
		{"http://127.0.0.1:3001", "127.0.0.1:3000", false},
		{"https://tools.example", "127.0.0.1:3000", true},
		{"https://tools.example/", "127.0.0.1:3000", true},
		{"http://tools.example", "127.0.0.1:3000", false},
		{"null", "127.0.0.1:3000", false},
		{"file://", "", false},
	} {
		if got := s.originAllowed(tt.origin, tt.host); got != tt.want {
			t.Errorf("originAllowed(%q, %q) = %v", tt.origin, tt.host, got)
		}
	}
}
