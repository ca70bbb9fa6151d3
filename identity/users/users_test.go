package users

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot/identity"
)

func openStore(t testing.TB, dir string) (*Store, *FileBackend) {
	t.Helper()
	b, err := OpenFile(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := Open(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func TestAddVerifyRemoveRotate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, b := openStore(t, dir)
	info, key, err := s.Add(ctx, " Alice@Example.com ", "builder")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "alice@example.com" || info.Role != identity.Builder || !strings.HasPrefix(key, KeyPrefix) || len(key) != len(KeyPrefix)+43 {
		t.Fatalf("Add = %+v, %q", info, key)
	}
	got, ok := s.Verify(key)
	if !ok || got.Name != "alice@example.com" || got.Pseudonym != s.Pseudonym(info.ID) {
		t.Fatalf("Verify(key) = %+v, %v", got, ok)
	}
	if _, ok := s.Verify(key + "x"); ok {
		t.Error("a key with a character more verified")
	}
	if _, ok := s.Verify(""); ok {
		t.Error("the empty key verified")
	}

	// Rotate: the old key stops, the new one works.
	_, key2, err := s.Rotate(ctx, "ALICE@example.com")
	if err != nil || key2 == "" || key2 == key {
		t.Fatalf("Rotate = %q, %v", key2, err)
	}
	if _, ok := s.Verify(key); ok {
		t.Error("the rotated-out key still verifies")
	}
	if _, ok := s.Verify(key2); !ok {
		t.Error("the new key does not verify")
	}
	// SetRole keeps the key.
	if info, err := s.SetRole(ctx, "alice@example.com", "admin"); err != nil || info.Role != identity.Admin {
		t.Fatalf("SetRole = %+v, %v", info, err)
	}
	if u, ok := s.Verify(key2); !ok || u.Role != identity.Admin {
		t.Errorf("after SetRole: %+v, %v", u, ok)
	}

	// Everything survives a restart, from the file alone.
	b.Close()
	s2, b2 := openStore(t, dir)
	if u, ok := s2.Verify(key2); !ok || u.Role != identity.Admin || u.Pseudonym != info.Pseudonym {
		t.Fatalf("after reopening: %+v, %v (pseudonym was %s)", u, ok, info.Pseudonym)
	}
	if _, err := s2.Remove(ctx, "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s2.Verify(key2); ok {
		t.Error("a removed user's key still verifies")
	}
	b2.Close()
	s3, _ := openStore(t, dir)
	if s3.Len() != 0 {
		t.Errorf("after remove and reopen: %d users", s3.Len())
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	if _, _, err := s.Add(ctx, "bob", identity.User); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	for _, tt := range []struct {
		what string
		err  error
		run  func() error
		msg  string
	}{
		{"duplicate", ErrExists, func() error { _, _, err := s.Add(ctx, "BOB", identity.Admin); return err }, `a user named "bob" exists already`},
		{"bad role", ErrInvalid, func() error { _, _, err := s.Add(ctx, "carol", "superuser"); return err }, `no role named "superuser": the roles are user, builder and admin`},
		{"empty role", ErrInvalid, func() error { _, _, err := s.Add(ctx, "carol", ""); return err }, "no role named"},
		{"bad name", ErrInvalid, func() error { _, _, err := s.Add(ctx, "c arol", identity.User); return err }, "may hold letters, digits"},
		{"empty name", ErrInvalid, func() error { _, _, err := s.Add(ctx, " ", identity.User); return err }, "needs a name"},
		{"reserved", ErrInvalid, func() error { _, _, err := s.Add(ctx, "local", identity.User); return err }, "reserved"},
		{"remove unknown", ErrNotFound, func() error { _, err := s.Remove(ctx, "dave"); return err }, `no user named "dave"`},
		{"rotate unknown", ErrNotFound, func() error { _, _, err := s.Rotate(ctx, "dave"); return err }, `no user named "dave"`},
		{"set bad role", ErrInvalid, func() error { _, err := s.SetRole(ctx, "bob", "root"); return err }, "no role named"},
	} {
		err := tt.run()
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v; want %v saying %q", tt.what, err, tt.err, tt.msg)
		}
	}
	after, _ := os.ReadFile(filepath.Join(dir, "users.json"))
	if string(before) != string(after) || s.Len() != 1 {
		t.Errorf("bad input changed the users:\n%s\n%s", before, after)
	}
}

func TestFilesHoldNoKeyAndOnlyTheServerReadsThem(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	var keys []string
	for _, n := range []string{"a", "b", "c"} {
		_, k, err := s.Add(ctx, n, identity.User)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	_, k, _ := s.Rotate(ctx, "b")
	keys = append(keys, k)
	for _, name := range []string{"users.json", SecretFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	scanForKeys(t, dir, keys)
}

// scanForKeys fails if any file under dir holds any of keys, or the random
// part of one.
func scanForKeys(t *testing.T, dir string, keys []string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, k := range keys {
			if strings.Contains(string(b), strings.TrimPrefix(k, KeyPrefix)) {
				t.Errorf("%s holds a plain key", p)
			}
		}
		return nil
	})
}

func TestOneWriter(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir)
	_, err := OpenFile(filepath.Join(dir, "users.json"))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("a second OpenFile = %v, want ErrLocked", err)
	}
}

func TestBrokenFilesAreRefusedNotReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := OpenFile(path); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("a broken users file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{not json" {
		t.Errorf("the broken file was changed: %q", b)
	}

	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, SecretFile), []byte(strings.Repeat("ab", 32)), 0o644)
	b, err := OpenFile(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := Open(context.Background(), b); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a secret others may read: %v", err)
	}
}

func TestPseudonyms(t *testing.T) {
	s1, _ := openStore(t, t.TempDir())
	s2, _ := openStore(t, t.TempDir())
	p := s1.Pseudonym("alice")
	if p != s1.Pseudonym("alice") || p == s1.Pseudonym("bob") {
		t.Errorf("pseudonyms are not stable and distinct: %s %s", p, s1.Pseudonym("bob"))
	}
	if p == s2.Pseudonym("alice") {
		t.Error("two servers with different secrets give one pseudonym: it is not keyed")
	}
	if strings.Contains(p, "alice") || len(p) != 18 {
		t.Errorf("pseudonym %q", p)
	}
}

// BenchmarkVerify is the cost of checking a key: one HMAC and a lookup.
func BenchmarkVerify(b *testing.B) {
	s, _ := openStore(b, b.TempDir())
	ctx := context.Background()
	var key string
	for i := range 200 {
		_, k, err := s.Add(ctx, "user"+string(rune('a'+i%26))+strings.Repeat("x", i/26), identity.User)
		if err != nil {
			b.Fatal(err)
		}
		key = k
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Verify(key); !ok {
			b.Fatal("no")
		}
	}
}

// TestIDsAreFixedAtCreation: the pseudonym comes from the user's ID, not
// their name, so a new user of a removed user's name is someone else; a
// user made before IDs keeps their name as ID, and with it their
// pseudonym (and history).
func TestIDsAreFixedAtCreation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := openStore(t, dir)
	old, _, err := s.Add(ctx, "frank", identity.User)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(old.ID, "U-") || old.Pseudonym != s.Pseudonym(old.ID) || old.Pseudonym == s.Pseudonym("frank") {
		t.Fatalf("a new user: %+v", old)
	}
	s.Remove(ctx, "frank")
	again, _, _ := s.Add(ctx, "frank", identity.User)
	if again.ID == old.ID || again.Pseudonym == old.Pseudonym {
		t.Errorf("a new frank took the old one's ID or pseudonym: %+v, %+v", old, again)
	}

	// A users file from before IDs: the name becomes the ID, written back.
	legacy := t.TempDir()
	os.WriteFile(filepath.Join(legacy, "users.json"), []byte(`{"version":1,"users":[{"name":"gus","role":"builder","key_hash":"ab","created":"2026-01-01T00:00:00Z"}]}`), 0o600)
	ls, lb := openStore(t, legacy)
	gus, ok := ls.Lookup("gus")
	if !ok || gus.ID != "gus" || gus.Pseudonym != ls.Pseudonym("gus") {
		t.Fatalf("an upgraded user: %+v", gus)
	}
	lb.Close()
	saved, _ := ReadFile(filepath.Join(legacy, "users.json"))
	if len(saved) != 1 || saved[0].ID != "gus" {
		t.Errorf("the upgrade was not written: %+v", saved)
	}
}

// TestSessionsOnTheServer: sessions are listed and end one by one or all
// at once; a rotation ends them all; a removal too.
func TestSessionsOnTheServer(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, t.TempDir())
	_, key, _ := s.Add(ctx, "hal", identity.Builder)
	u, a, ok, err := s.Login(ctx, key, time.Hour)
	if !ok || err != nil || u.Name != "hal" {
		t.Fatalf("Login: %+v, %v, %v", u, ok, err)
	}
	_, b, _, _ := s.Login(ctx, key, time.Hour)
	if _, _, ok, _ := s.Login(ctx, "adaptbot_nope", time.Hour); ok {
		t.Error("a wrong key signed in")
	}
	if got := s.Sessions("HAL"); len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID || got[0].Method != SignInKey {
		t.Fatalf("Sessions = %+v", got)
	}
	if n, err := s.EndSessions(ctx, "hal", a.ID); n != 1 || err != nil {
		t.Fatalf("EndSessions(a) = %d, %v", n, err)
	}
	if _, ok := s.CheckSession("hal", a.ID); ok {
		t.Error("an ended session is still on")
	}
	if _, ok := s.CheckSession("hal", b.ID); !ok {
		t.Error("ending one session ended another")
	}
	s.Rotate(ctx, "hal")
	if _, ok := s.CheckSession("hal", b.ID); ok || len(s.Sessions("hal")) != 0 {
		t.Error("a rotation left a session on")
	}
	// Someone the store does not hold: kept on a guest record.
	g, _ := s.StartSession(ctx, "ivy@example.com", SignInOIDC, identity.Builder, time.Hour)
	if got, ok := s.CheckSession("ivy@example.com", g.ID); !ok || got.Role != identity.Builder {
		t.Errorf("a guest's session: %+v, %v", got, ok)
	}
	if _, ok := s.CheckSession("hal", g.ID); ok {
		t.Error("a guest's session counted as another's")
	}
	if n, _ := s.EndSessions(ctx, "ivy@example.com", ""); n != 1 {
		t.Errorf("ending a guest's sessions ended %d", n)
	}
	// Expired sessions are not on.
	_, key, _ = s.Rotate(ctx, "hal")
	_, c, _, _ := s.Login(ctx, key, -time.Second)
	if _, ok := s.CheckSession("hal", c.ID); ok {
		t.Error("an expired session is on")
	}
}

// TestGuestSessionsAreKeptLikeUsers: the sessions of someone the store does
// not hold (the admin token, an OIDC sign-in of a non-user) are on a guest
// record in the backend, so another replica, or the server after a
// restart, knows them; they are never listed as users; and a person who
// becomes a user and is removed again gets none of their old guest
// sessions back.
func TestGuestSessionsAreKeptLikeUsers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, fa := openStore(t, dir)
	tok, err := a.StartSession(ctx, TokenName, SignInKey, identity.Admin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ivy, _ := a.StartSession(ctx, "ivy@example.com", SignInOIDC, identity.Builder, time.Hour)
	fa.Close()
	b, fb := openStore(t, dir) // a restart (a cluster's replicas share the backend the same way)
	if got, ok := b.CheckSession(TokenName, tok.ID); !ok || got.Role != identity.Admin {
		t.Fatalf("the admin token's session elsewhere: %+v, %v", got, ok)
	}
	if _, ok := b.CheckSession("ivy@example.com", ivy.ID); !ok {
		t.Fatal("a guest's OIDC session is unknown elsewhere")
	}
	if n := b.Len(); n != 0 || len(b.List()) != 0 {
		t.Errorf("guest records listed as users: %d, %+v", n, b.List())
	}
	if _, ok := b.Lookup(GuestPrefix + TokenName); ok {
		t.Error("a guest record is found as a user")
	}
	if n, err := b.EndSessions(ctx, TokenName, tok.ID); n != 1 || err != nil {
		t.Fatalf("sign-out: %d, %v", n, err)
	}
	// ivy becomes a user, then is removed: her guest session stays over.
	b.Add(ctx, "ivy@example.com", identity.User)
	b.Remove(ctx, "ivy@example.com")
	if _, ok := b.CheckSession("ivy@example.com", ivy.ID); ok {
		t.Error("a removed user got her old guest session back")
	}
	fb.Close()
	c, _ := openStore(t, dir)
	if len(c.Sessions(TokenName)) != 0 {
		t.Error("a signed-out guest session is back after a restart")
	}
	if len(c.Sessions("ivy@example.com")) != 0 {
		t.Error("the guest record outlived the user")
	}
}
