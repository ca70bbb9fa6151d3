package auth

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"adaptbot/identity"
)

// FuzzSessionCookie feeds the session cookie anything a browser (or an
// attacker) can send. A cookie the server did not sign must never yield
// an identity, and nothing may panic.
func FuzzSessionCookie(f *testing.F) {
	store := newStore(f)
	_, key, err := store.Add(context.Background(), "bob", identity.Builder)
	if err != nil {
		f.Fatal(err)
	}
	a := newAuth(f, Settings{AdminToken: "fuzz-admin-token-0123456789", Users: store})
	good, _, err := a.KeyLogin(context.Background(), key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("v1.e30.AAAA")
	f.Add("v1..")
	f.Add("")
	f.Fuzz(func(t *testing.T, cookie string) {
		id, err := a.Authenticate(Request{Remote: other, Session: cookie})
		if err != nil {
			if id.Known() {
				t.Fatalf("an error (%v) with an identity %+v", err, id)
			}
			return
		}
		// Only a cookie this server sealed can name someone, and the fuzzer
		// cannot forge the MAC: what signs in carries good's signed part
		// (its MAC's base64 may differ only in unused trailing bits).
		signed := func(s string) string { return s[:max(strings.LastIndexByte(s, '.'), 0)] }
		if id.Known() && signed(cookie) != signed(good) {
			t.Fatalf("cookie %q (not ours) signed in as %+v", cookie, id)
		}
	})
}

// FuzzTrustedHeader feeds the trusted header anything a proxy may pass
// through. A name that comes out is printable, lower case and at most
// 256 bytes; nothing panics.
func FuzzTrustedHeader(f *testing.F) {
	proxies, err := ParseProxies("10.0.0.0/24")
	if err != nil {
		f.Fatal(err)
	}
	a := newAuth(f, Settings{TrustedHeader: "X-Forwarded-User", TrustedProxies: proxies})
	for _, s := range []string{"frank@example.com", "  Erin ", "a\x00b", "é", strings.Repeat("x", 300), "\xff", "admin-token"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		id, err := a.Authenticate(Request{Remote: proxy, Header: func(string) []string { return []string{v} }})
		if err != nil {
			if id.Known() {
				t.Fatalf("an error (%v) with an identity %+v", err, id)
			}
			return
		}
		if strings.TrimSpace(v) == "" {
			return // no header: nobody
		}
		if !id.Known() {
			t.Fatalf("header %q: no identity and no error", v)
		}
		if len(id.Name) > 256 || strings.ContainsFunc(id.Name, func(r rune) bool { return !unicode.IsPrint(r) }) {
			t.Fatalf("header %q gave the name %q", v, id.Name)
		}
		if id.Name != strings.ToLower(id.Name) {
			t.Fatalf("header %q gave %q, not in lower case", v, id.Name)
		}
	})
}
