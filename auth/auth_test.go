package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/auth/oidctest"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

func newStore(t testing.TB) *users.Store {
	t.Helper()
	b, err := users.OpenFile(filepath.Join(t.TempDir(), "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := users.Open(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newAuth(t testing.TB, s Settings) *Authenticator {
	t.Helper()
	if s.Users == nil {
		s.Users = newStore(t)
	}
	a, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	loop  = netip.MustParseAddr("127.0.0.1")
	proxy = netip.MustParseAddr("10.0.0.5")
	other = netip.MustParseAddr("192.0.2.7")
)

// wantUnauthenticated checks err is a 401 whose message says msg.
func wantUnauthenticated(t *testing.T, what string, id identity.Identity, err error, msg string) {
	t.Helper()
	if adaptbot.KindOf(err) != adaptbot.Unauthenticated || !strings.Contains(err.Error(), msg) || id.Known() {
		t.Errorf("%s: %+v, %v; want unauthenticated saying %q", what, id, err, msg)
	}
}

func TestSingleUserOnLoopback(t *testing.T) {
	a := newAuth(t, Settings{Loopback: true})
	if !a.SingleUser() {
		t.Fatal("loopback with nothing configured is not single-user")
	}
	for _, r := range []Request{{Remote: loop}, {Remote: loop, Authorization: "Bearer stale-token-from-a-page"}, {Remote: loop, Session: "junk"}} {
		id, err := a.Authenticate(r)
		if err != nil || id.Name != "local" || id.Role != identity.Admin || id.Method != identity.Loopback || id.Pseudonym == "" {
			t.Errorf("%+v: %+v, %v; want the local user", r, id, err)
		}
	}
	// Configured on loopback: no longer single-user.
	if newAuth(t, Settings{Loopback: true, AdminToken: "t0ken"}).SingleUser() {
		t.Error("a token on loopback left the server single-user")
	}
	if (Settings{Loopback: false, Users: newStore(t)}).Configured() {
		t.Error("nothing configured beyond loopback counts as configured")
	}
}

func TestKeysAndTheAdminToken(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	_, key, _ := store.Add(ctx, "bob", identity.Builder)
	_, gone, _ := store.Add(ctx, "carol", identity.User)
	store.Remove(ctx, "carol")
	_, old, _ := store.Add(ctx, "dave", identity.User)
	store.Rotate(ctx, "dave")
	a := newAuth(t, Settings{AdminToken: "s3cret-token", Users: store})

	bob, _ := store.Lookup("bob")
	id, err := a.Authenticate(Request{Remote: other, Authorization: "Bearer " + key})
	if err != nil || id.Name != "bob" || id.Role != identity.Builder || id.Method != identity.Key || id.Pseudonym != bob.Pseudonym {
		t.Fatalf("bob's key: %+v, %v", id, err)
	}
	id, err = a.Authenticate(Request{Remote: other, Authorization: "bearer s3cret-token"})
	if err != nil || id.Role != identity.Admin || id.Method != identity.Token || id.Name != users.TokenName {
		t.Fatalf("the admin token: %+v, %v", id, err)
	}
	for _, tt := range []struct{ what, auth, msg string }{
		{"unknown key", "Bearer adaptbot_nope", "this key is not valid"},
		{"removed user's key", "Bearer " + gone, "this key is not valid"},
		{"rotated key", "Bearer " + old, "this key is not valid"},
		{"basic auth", "Basic Ym9iOnB3", "Authorization: Bearer KEY"},
		{"empty bearer", "Bearer ", "Authorization: Bearer KEY"},
	} {
		id, err := a.Authenticate(Request{Remote: other, Authorization: tt.auth})
		wantUnauthenticated(t, tt.what, id, err, tt.msg)
	}
	// Nothing presented: nobody, and no error.
	if id, err := a.Authenticate(Request{Remote: other}); err != nil || id.Known() {
		t.Errorf("anonymous: %+v, %v", id, err)
	}
}

func TestTrustedHeaderOnlyFromTrustedProxies(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	store.Add(ctx, "erin@example.com", identity.Admin)
	proxies, err := ParseProxies("10.0.0.0/24, ::1")
	if err != nil {
		t.Fatal(err)
	}
	a := newAuth(t, Settings{TrustedHeader: "X-Forwarded-User", TrustedProxies: proxies, Users: store})
	hdr := func(vs ...string) func(string) []string {
		return func(name string) []string {
			if http.CanonicalHeaderKey(name) == "X-Forwarded-User" {
				return vs
			}
			return nil
		}
	}
	id, err := a.Authenticate(Request{Remote: proxy, Header: hdr("Frank@Example.com")})
	if err != nil || id.Name != "frank@example.com" || id.Role != identity.User || id.Method != identity.Header {
		t.Errorf("from the proxy: %+v, %v", id, err)
	}
	// The user store's role applies to a header's name too.
	erin, _ := store.Lookup("erin@example.com")
	if id, _ := a.Authenticate(Request{Remote: netip.MustParseAddr("::ffff:10.0.0.9"), Header: hdr("erin@example.com")}); id.Role != identity.Admin || id.Pseudonym != erin.Pseudonym {
		t.Errorf("a stored admin through the proxy (IPv4-mapped): %+v", id)
	}
	for _, from := range []netip.Addr{other, loop, netip.MustParseAddr("10.0.1.5")} {
		if id, err := a.Authenticate(Request{Remote: from, Header: hdr("erin@example.com")}); err != nil || id.Known() {
			t.Errorf("the header from %s was honoured: %+v, %v", from, id, err)
		}
	}
	id, err = a.Authenticate(Request{Remote: proxy, Header: hdr("bad\x01name")})
	wantUnauthenticated(t, "a control character", id, err, "usable name")
	// Sent twice, the first could be the client's own: refused, not the
	// first taken.
	id, err = a.Authenticate(Request{Remote: proxy, Header: hdr("erin@example.com", "frank@example.com")})
	wantUnauthenticated(t, "a duplicated header", id, err, "came 2 times")
	// Our own identities' names are not anyone's to take.
	for _, name := range users.Reserved {
		id, err = a.Authenticate(Request{Remote: proxy, Header: hdr(strings.ToUpper(name))})
		wantUnauthenticated(t, "the reserved name "+name, id, err, "reserved")
	}

	if _, err := New(Settings{TrustedHeader: "X-Forwarded-User", Users: store}); err == nil {
		t.Error("a trusted header without proxies was accepted")
	}
	if _, err := ParseProxies("10.0.0.0/8, proxy.example.com"); err == nil || !strings.Contains(err.Error(), "proxy.example.com") {
		t.Errorf("a host name as a proxy: %v", err)
	}
}

func TestKeySessions(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	_, key, _ := store.Add(ctx, "gina", identity.Builder)
	a := newAuth(t, Settings{Users: store, AdminToken: "tok"})
	cookie, id, err := a.KeyLogin(ctx, key)
	if err != nil || id.Name != "gina" {
		t.Fatalf("KeyLogin: %+v, %v", id, err)
	}
	if strings.Contains(cookie, strings.TrimPrefix(key, users.KeyPrefix)) {
		t.Fatal("the session cookie holds the key")
	}
	gina, _ := store.Lookup("gina")
	got, err := a.Authenticate(Request{Remote: other, Session: cookie})
	if err != nil || got.Name != "gina" || got.Role != identity.Builder || got.Method != identity.Session || got.Pseudonym != gina.Pseudonym {
		t.Fatalf("the session: %+v, %v", got, err)
	}
	// A role change applies to the session at once.
	store.SetRole(ctx, "gina", identity.User)
	if got, _ := a.Authenticate(Request{Remote: other, Session: cookie}); got.Role != identity.User {
		t.Errorf("after a role change: %+v", got)
	}
	// Forged: any change to the payload or the signature.
	i := strings.IndexByte(cookie, '.') + 3
	forged := cookie[:i] + string(cookie[i]^1) + cookie[i+1:]
	id, err = a.Authenticate(Request{Remote: other, Session: forged})
	wantUnauthenticated(t, "forged", id, err, "not valid here")
	if !errors.Is(err, ErrSession) {
		t.Error("a forged session is not ErrSession")
	}
	// Signed by another server.
	b := newAuth(t, Settings{Users: newStore(t), AdminToken: "tok"})
	tokCookie, _, _ := b.KeyLogin(ctx, "tok")
	id, err = a.Authenticate(Request{Remote: other, Session: tokCookie})
	wantUnauthenticated(t, "another server's", id, err, "not valid here")
	// The token's own session works, until it signs out.
	tokCookie, _, _ = a.KeyLogin(ctx, "tok")
	if got, err := a.Authenticate(Request{Remote: other, Session: tokCookie}); err != nil || got.Role != identity.Admin {
		t.Errorf("a token session: %+v, %v", got, err)
	}
	if err := a.SignOut(ctx, tokCookie); err != nil {
		t.Fatal(err)
	}
	id, err = a.Authenticate(Request{Remote: other, Session: tokCookie})
	wantUnauthenticated(t, "token signed out", id, err, "has ended")
	// Expired.
	short := newAuth(t, Settings{Users: store, SessionTTL: time.Nanosecond})
	expired, _, _ := short.KeyLogin(ctx, key)
	id, err = short.Authenticate(Request{Remote: other, Session: expired})
	wantUnauthenticated(t, "expired", id, err, "expired")
	// Rotation and removal end the key's sessions.
	store.Rotate(ctx, "gina")
	id, err = a.Authenticate(Request{Remote: other, Session: cookie})
	wantUnauthenticated(t, "rotated", id, err, "rotated")
	_, key, _ = store.Rotate(ctx, "gina")
	cookie, _, _ = a.KeyLogin(ctx, key)
	store.Remove(ctx, "gina")
	id, err = a.Authenticate(Request{Remote: other, Session: cookie})
	wantUnauthenticated(t, "removed", id, err, "removed")
	_, _, err = a.KeyLogin(ctx, key)
	wantUnauthenticated(t, "a removed user's key at sign-in", identity.Identity{}, err, "not valid")
}

// signIn runs a sign-in as a browser would, and returns the callback's
// query (the provider's redirect back) and the login cookie.
func signIn(t *testing.T, a *Authenticator, next string) (url.Values, string) {
	t.Helper()
	authURL, cookie, err := a.BeginLogin(context.Background(), "http://127.0.0.1:3000/login/callback", next)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), "http://127.0.0.1:3000/login/callback?") {
		t.Fatalf("the provider answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query(), cookie
}

func oidcAuth(t *testing.T, store *users.Store, roles string) (*Authenticator, *oidctest.Issuer) {
	t.Helper()
	iss := oidctest.Start(t, "adaptbot", "client-secret")
	rc, err := ParseRolesClaim(roles)
	if err != nil {
		t.Fatal(err)
	}
	return newAuth(t, Settings{Users: store, OIDC: &OIDCSettings{Issuer: iss.URL, ClientID: "adaptbot", ClientSecret: "client-secret", Roles: rc}}), iss
}

func TestOIDCSignIn(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	store.Add(ctx, "root@example.com", identity.Admin)
	a, iss := oidcAuth(t, store, "groups:ab-builders=builder,ab-admins=admin")

	q, cookie := signIn(t, a, "/tools?x=1")
	sess, id, next, err := a.FinishLogin(ctx, cookie, q)
	if err != nil || id.Name != "alice@example.com" || id.Role != identity.User || next != "/tools?x=1" {
		t.Fatalf("FinishLogin: %+v, %q, %v", id, next, err)
	}
	got, err := a.Authenticate(Request{Remote: other, Session: sess})
	if err != nil || got.Name != "alice@example.com" || got.Method != identity.Session || got.Pseudonym != store.Pseudonym("alice@example.com") {
		t.Fatalf("the session: %+v, %v", got, err)
	}
	// Signed out, the cookie replayed is refused.
	if err := a.SignOut(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Authenticate(Request{Remote: other, Session: sess}); err == nil || got.Known() {
		t.Errorf("a signed-out OIDC session replayed: %+v, %v", got, err)
	}
	// The code is good once.
	if _, _, _, err := a.FinishLogin(ctx, cookie, q); adaptbot.KindOf(err) != adaptbot.Upstream {
		t.Errorf("a used code: %v", err)
	}

	// Roles from the claim; the highest wins; unmapped values give nothing.
	iss.SignInAs(map[string]any{"sub": "2", "email": "bo@example.com", "email_verified": true, "groups": []any{"staff", "ab-builders"}})
	q, cookie = signIn(t, a, "")
	if _, id, next, err := a.FinishLogin(ctx, cookie, q); err != nil || id.Role != identity.Builder || next != "/" {
		t.Errorf("a builder by claim: %+v, %q, %v", id, next, err)
	}
	iss.SignInAs(map[string]any{"sub": "3", "email": "cy@example.com", "email_verified": true, "groups": []any{"ab-builders", "ab-admins"}})
	q, cookie = signIn(t, a, "")
	if _, id, _, _ := a.FinishLogin(ctx, cookie, q); id.Role != identity.Admin {
		t.Errorf("builder and admin by claim: %+v", id)
	}
	// A stored user's role wins over the claim.
	iss.SignInAs(map[string]any{"sub": "4", "email": "ROOT@example.com", "email_verified": true})
	q, cookie = signIn(t, a, "")
	rootSess, id, _, _ := a.FinishLogin(ctx, cookie, q)
	if id.Role != identity.Admin || id.Name != "root@example.com" {
		t.Errorf("a stored admin signing in: %+v", id)
	}
	// Removed from the store, their OIDC session ends at once.
	if got, err := a.Authenticate(Request{Remote: other, Session: rootSess}); err != nil || got.Role != identity.Admin {
		t.Fatalf("a stored admin's OIDC session: %+v, %v", got, err)
	}
	store.Remove(ctx, "root@example.com")
	if got, err := a.Authenticate(Request{Remote: other, Session: rootSess}); !errors.Is(err, ErrSession) || got.Known() {
		t.Errorf("an OIDC session after its user was removed: %+v, %v", got, err)
	}
	// A provider that names someone by a reserved name is refused.
	iss.SignInAs(map[string]any{"sub": "9", "email": "admin-token", "email_verified": true})
	q, cookie = signIn(t, a, "")
	if s, id, _, err := a.FinishLogin(ctx, cookie, q); adaptbot.KindOf(err) != adaptbot.Unauthenticated || s != "" || id.Known() || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("an OIDC sign-in as admin-token: %+v, %v", id, err)
	}
	// An unverified e-mail is not taken as the name: it could be anyone's.
	iss.SignInAs(map[string]any{"sub": "5", "email": "root@example.com", "email_verified": false})
	q, cookie = signIn(t, a, "")
	if _, id, _, _ := a.FinishLogin(ctx, cookie, q); id.Role != identity.User || !strings.HasPrefix(id.Name, "5@127.0.0.1:") {
		t.Errorf("an unverified e-mail: %+v", id)
	}
}

func TestOIDCRefusals(t *testing.T) {
	ctx := context.Background()
	a, iss := oidcAuth(t, newStore(t), "")
	for _, tt := range []struct {
		what   string
		tamper func(q url.Values, cookie string) (url.Values, string)
		mutate func(map[string]any)
		kind   adaptbot.Kind
		msg    string
	}{
		{what: "state differs", tamper: func(q url.Values, c string) (url.Values, string) { q.Set("state", "x"); return q, c },
			kind: adaptbot.Unauthenticated, msg: "state does not match"},
		{what: "no login cookie", tamper: func(q url.Values, c string) (url.Values, string) { return q, "" },
			kind: adaptbot.Unauthenticated, msg: "not started in this browser"},
		{what: "forged login cookie", tamper: func(q url.Values, c string) (url.Values, string) { return q, c[:len(c)-2] + "AA" },
			kind: adaptbot.Unauthenticated, msg: "not started in this browser"},
		{what: "provider error", tamper: func(q url.Values, c string) (url.Values, string) {
			return url.Values{"error": {"access_denied"}, "error_description": {"no"}}, c
		}, kind: adaptbot.Unauthenticated, msg: "access_denied"},
		{what: "wrong nonce", mutate: func(c map[string]any) { c["nonce"] = "other" }, kind: adaptbot.Unauthenticated, msg: "nonce"},
		{what: "expired token", mutate: func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }, kind: adaptbot.Unauthenticated, msg: "expired"},
		{what: "another audience", mutate: func(c map[string]any) { c["aud"] = "someone-else" }, kind: adaptbot.Unauthenticated, msg: "audience"},
		{what: "another issuer", mutate: func(c map[string]any) { c["iss"] = "https://evil.example" }, kind: adaptbot.Unauthenticated, msg: "different provider"},
	} {
		iss.Mutate(tt.mutate)
		q, cookie := signIn(t, a, "/")
		if tt.tamper != nil {
			q, cookie = tt.tamper(q, cookie)
		}
		sess, id, _, err := a.FinishLogin(ctx, cookie, q)
		if adaptbot.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.msg) || sess != "" || id.Known() {
			t.Errorf("%s: %q, %+v, %v; want %s saying %q", tt.what, sess, id, err, tt.kind, tt.msg)
		}
	}
	iss.Mutate(nil)
	// A provider that is away: 503 at sign-in, and the server still starts.
	away := newAuth(t, Settings{Users: newStore(t), OIDC: &OIDCSettings{Issuer: "http://127.0.0.1:1", ClientID: "a", ClientSecret: "b"}})
	if _, _, err := away.BeginLogin(ctx, "http://x/login/callback", "/"); adaptbot.KindOf(err) != adaptbot.Unavailable {
		t.Errorf("a provider that is away: %v", err)
	}
	if _, err := New(Settings{Users: newStore(t), OIDC: &OIDCSettings{Issuer: "issuer.example"}}); err == nil ||
		!strings.Contains(err.Error(), "client ID and the client secret") {
		t.Errorf("half an OIDC configuration: %v", err)
	}
}

func TestParseRolesClaim(t *testing.T) {
	claims := map[string]any{
		"groups":       []any{"dev", "ab-admins"},
		"role":         "builder",
		"realm_access": map[string]any{"roles": []any{"offline_access", "user", "builder"}},
	}
	for _, tt := range []struct {
		setting string
		want    identity.Role
		err     string
	}{
		{setting: "role", want: identity.Builder},
		{setting: "realm_access.roles", want: identity.Builder},
		{setting: "groups", want: ""},
		{setting: "groups:ab-admins=admin", want: identity.Admin},
		{setting: "groups:dev=builder", want: identity.Builder},
		{setting: "missing.claim", want: ""},
		{setting: "groups:ab-admins=root", err: `no role named "root"`},
		{setting: "groups:=admin", err: "want CLAIM:VALUE=ROLE"},
		{setting: "a..b", err: "empty part"},
	} {
		rc, err := ParseRolesClaim(tt.setting)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.setting, err, tt.err)
			}
			continue
		}
		if err != nil || rc.Role(claims) != tt.want {
			t.Errorf("%q: %v, %v; want %q", tt.setting, rc, err, tt.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/tools/x?a=1": "/tools/x?a=1", "": "/", "https://evil.example/": "/", "//evil.example": "/",
		"/\\evil.example": "/", "javascript:alert(1)": "/", "/login": "/", "/a\r\nSet-Cookie: x": "/",
	} {
		if got := SafeNext(in); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkAuthenticate is what establishing an identity costs a request.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	store := newStore(b)
	var key string
	for i := range 100 {
		_, key, _ = store.Add(ctx, "user"+strings.Repeat("x", i), identity.User)
	}
	b.Run("key", func(b *testing.B) {
		a := newAuth(b, Settings{Users: store, AdminToken: "tok"})
		r := Request{Remote: other, Authorization: "Bearer " + key}
		b.ReportAllocs()
		for b.Loop() {
			if id, err := a.Authenticate(r); err != nil || !id.Known() {
				b.Fatal(err)
			}
		}
	})
	b.Run("session", func(b *testing.B) {
		a := newAuth(b, Settings{Users: store, AdminToken: "tok"})
		cookie, _, _ := a.KeyLogin(ctx, key)
		r := Request{Remote: other, Session: cookie}
		b.ReportAllocs()
		for b.Loop() {
			if id, err := a.Authenticate(r); err != nil || !id.Known() {
				b.Fatal(err)
			}
		}
	})
	b.Run("loopback", func(b *testing.B) {
		a := newAuth(b, Settings{Loopback: true})
		r := Request{Remote: loop}
		b.ReportAllocs()
		for b.Loop() {
			if id, _ := a.Authenticate(r); !id.Known() {
				b.Fatal("nobody")
			}
		}
	})
}

// TestKeyLoginDoesNotOutliveARotation races sign-ins with rotations of the
// same key: a session that a sign-in made either failed or ended with the
// rotation. (Before the sign-in checked the key and stored its session in
// one step, it read the key's ID after the check, so a session could take
// the new key's ID and outlive the rotation.)
func TestKeyLoginDoesNotOutliveARotation(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a := newAuth(t, Settings{Users: store})
	_, key, _ := store.Add(ctx, "rita", identity.Builder)
	for i := range 200 {
		var cookie string
		var loginErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			cookie, _, loginErr = a.KeyLogin(ctx, key)
		}()
		_, next, err := store.Rotate(ctx, "rita")
		if err != nil {
			t.Fatal(err)
		}
		<-done
		if loginErr == nil {
			if id, err := a.Authenticate(Request{Remote: other, Session: cookie}); err == nil || id.Known() {
				t.Fatalf("round %d: a sign-in with the rotated-out key outlived the rotation: %+v", i, id)
			}
		}
		key = next
	}
}

func TestThrottleBacksOffPerAddress(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	th := NewThrottle(time.Minute)
	th.Now = func() time.Time { return now }
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range th.Free {
		if d := th.Fail(a); d != 0 {
			t.Fatalf("a free failure waits %v", d)
		}
	}
	var got []time.Duration
	for range 9 {
		got = append(got, th.Fail(a))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", got, want)
		}
	}
	if th.Wait(a) != time.Minute || th.Wait(b) != 0 {
		t.Errorf("Wait(a) = %v, Wait(b) = %v", th.Wait(a), th.Wait(b))
	}
	now = now.Add(time.Minute)
	if th.Wait(a) != 0 {
		t.Error("the wait did not end")
	}
	// Quiet long enough, the address starts afresh.
	now = now.Add(th.Forget + time.Second)
	if d := th.Fail(a); d != 0 {
		t.Errorf("after a quiet spell the first failure waits %v", d)
	}
	// One IPv6 client counts by its /64.
	for i := range th.Free + 1 {
		th.Fail(netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i+1)))
	}
	if th.Wait(netip.MustParseAddr("2001:db8::ffff")) == 0 {
		t.Error("addresses of one /64 counted apart")
	}
}
