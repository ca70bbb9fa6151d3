package secrets_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/secrets"
)

var (
	alice = identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	bob   = identity.Identity{Name: "bob", Role: identity.Builder, Pseudonym: "u-bob", Method: identity.Key}
	root  = identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "u-root", Method: identity.Key}
)

var key = []byte("0123456789abcdef0123456789abcdef")

func as(who identity.Identity) context.Context { return identity.With(context.Background(), who) }

func open(t *testing.T, path string, k []byte) *secrets.Store {
	t.Helper()
	b, err := secrets.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := secrets.Open(b, k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const value = "sk-live-CANARY-4b1d9e"

// TestValuesAreSealedAtRest: the file is 0600 and holds no value in any
// plain form; the same key reads it back after a restart, another key
// cannot, and a sealed value moved to another person does not open.
func TestValuesAreSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	s := open(t, path, key)
	if _, err := s.Set(as(alice), "TOKEN", value, []string{"api.example.com"}, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	raw, _ := os.ReadFile(path)
	for _, f := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)), base64.RawStdEncoding.EncodeToString([]byte(value))} {
		if strings.Contains(string(raw), f) {
			t.Errorf("the file holds the value (%q):\n%s", f, raw)
		}
	}
	v, err := open(t, path, key).Resolve(as(alice), "TOKEN")
	if err != nil || v.Secret != value || v.Scope != secrets.Personal || v.Owner != "u-alice" {
		t.Fatalf("after a restart: %+v, %v", v, err)
	}
	if _, err := open(t, path, []byte(strings.Repeat("z", 32))).Resolve(as(alice), "TOKEN"); err == nil || !strings.Contains(err.Error(), "does not open with this server's key") {
		t.Errorf("another key: %v", err)
	}

	// Alice's sealed value copied under bob's name does not open for bob.
	var f struct {
		Records map[string]json.RawMessage `json:"records"`
	}
	json.Unmarshal(raw, &f)
	for k, r := range f.Records {
		f.Records[strings.Replace(k, base64.RawURLEncoding.EncodeToString([]byte("u-alice")), base64.RawURLEncoding.EncodeToString([]byte("u-bob")), 1)] = r
	}
	moved, _ := json.Marshal(f)
	os.WriteFile(path, moved, 0o600)
	if _, err := open(t, path, key).Resolve(as(bob), "TOKEN"); err == nil || errors.Is(err, secrets.ErrNoSecret) {
		t.Errorf("a moved value opened, or was not seen: %v", err)
	}

	os.Chmod(path, 0o644)
	if _, err := secrets.OpenFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a file others may read: %v", err)
	}
}

// TestWhoMayDoWhat: a person keeps their own secrets, sees their own and
// the shared ones and never a value; only an admin shares; nobody signed
// in keeps nothing.
func TestWhoMayDoWhat(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "secrets.json"), key)
	if _, err := s.Set(as(alice), "HOOK", "alice-hook-1", []string{"hooks.example.org"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(as(alice), "HOOK", "alice-hook-1", []string{"hooks.example.org"}, true); adaptbot.KindOf(err) != adaptbot.Forbidden {
		t.Errorf("a user shares: %v", err)
	}
	if _, err := s.Set(as(root), "HOOK", "team-hook-9", []string{"hooks.example.org", "backup.example.org:8443"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(context.Background(), "X", "whatever", []string{"a.example.org"}, false); adaptbot.KindOf(err) != adaptbot.Forbidden {
		t.Errorf("nobody keeps a secret: %v", err)
	}
	for _, bad := range []struct {
		name, value string
		hosts       []string
	}{
		{"bad name", "value-1", []string{"a.example.org"}},
		{"OK", "abc", []string{"a.example.org"}},
		{"OK", "line\nbreak", []string{"a.example.org"}},
		{"OK", "value-1", nil},
		{"OK", "value-1", []string{"https://a.example.org/"}},
	} {
		if _, err := s.Set(as(bob), bad.name, bad.value, bad.hosts, false); adaptbot.KindOf(err) != adaptbot.Invalid {
			t.Errorf("Set(%q, %q, %v): %v, want invalid", bad.name, bad.value, bad.hosts, err)
		}
	}
	list, err := s.List(as(alice))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(list)
	if len(list) != 2 || list[0].Scope != secrets.Personal || list[1].Scope != secrets.Shared || strings.Contains(string(raw), "hook-1") || strings.Contains(string(raw), "hook-9") {
		t.Errorf("alice's list: %s", raw)
	}
	if list, _ := s.List(as(bob)); len(list) != 1 || list[0].Scope != secrets.Shared {
		t.Errorf("bob's list: %+v", list)
	}
	// Bob has none of his own: the shared one serves him; alice keeps hers.
	if v, err := s.Resolve(as(bob), "HOOK"); err != nil || v.Secret != "team-hook-9" {
		t.Errorf("bob: %+v, %v", v, err)
	}
	if v, err := s.Resolve(as(alice), "HOOK"); err != nil || v.Secret != "alice-hook-1" {
		t.Errorf("alice: %+v, %v", v, err)
	}
	if _, err := s.Resolve(as(bob), "NONE"); !errors.Is(err, secrets.ErrNoSecret) {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := s.Delete(as(bob), "HOOK", true); adaptbot.KindOf(err) != adaptbot.Forbidden {
		t.Errorf("a user deletes the shared one: %v", err)
	}
	if _, err := s.Delete(as(bob), "HOOK", false); adaptbot.KindOf(err) != adaptbot.NotFound {
		t.Errorf("bob deletes what he has not: %v", err)
	}
	if _, err := s.Delete(as(alice), "HOOK", false); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Resolve(as(alice), "HOOK"); v.Secret != "team-hook-9" {
		t.Errorf("after deleting her own, alice gets %q", v.Secret)
	}
	if list, _ := s.List(as(alice)); len(list) != 1 || list[0].LastUsed.IsZero() {
		t.Errorf("the shared secret's last use is not kept: %+v", list)
	}
}

// TestTrustIsPerVersion: a trust holds for the version it was given for
// alone, and only an admin gives it.
func TestTrustIsPerVersion(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "secrets.json"), key)
	tr := secrets.Trust{Tool: "post_hook", Version: 2, SHA256: "aaa", Host: "Hooks.Example.org"}
	if _, err := s.SetTrust(as(bob), tr); adaptbot.KindOf(err) != adaptbot.Forbidden {
		t.Errorf("a builder trusts: %v", err)
	}
	got, err := s.SetTrust(as(root), tr)
	if err != nil || got.Host != "hooks.example.org" || got.By != "u-root" || got.At.IsZero() || time.Since(got.At) > time.Minute {
		t.Fatalf("trust: %+v, %v", got, err)
	}
	ctx := context.Background()
	if !s.Trusted(ctx, "post_hook", 2, "aaa", "hooks.example.org") {
		t.Error("the trusted version is not trusted")
	}
	for _, c := range []struct {
		v    int
		sha  string
		host string
	}{{3, "bbb", "hooks.example.org"}, {2, "bbb", "hooks.example.org"}, {2, "aaa", "other.example.org"}} {
		if s.Trusted(ctx, "post_hook", c.v, c.sha, c.host) {
			t.Errorf("trusted %+v", c)
		}
	}
	if list, _ := s.Trusts(ctx, "post_hook"); len(list) != 1 || list[0].Version != 2 {
		t.Errorf("trusts: %+v", list)
	}
	if err := s.RemoveTrust(as(root), "post_hook", "hooks.example.org"); err != nil {
		t.Fatal(err)
	}
	if s.Trusted(ctx, "post_hook", 2, "aaa", "hooks.example.org") {
		t.Error("still trusted after removal")
	}
}
