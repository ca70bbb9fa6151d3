package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot/auth"
	"adaptbot/auth/oidctest"
	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/config"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/poll"
	"adaptbot/service"
	"adaptbot/web"
)

// authServer is the edge over a service that knows only the users: the
// identities opened as serve opens them (openAuth), and the users API
// through the service. /api/me answers with the caller's identity. It
// listens on loopback; its configuration may say it listens beyond
// (ADAPTBOT_ADDR), which is what decides single-user mode and Secure
// cookies.
type authServer struct {
	url  string
	dir  string
	env  map[string]string
	edge *people
	auth *web.Auth
	log  *syncBuffer
}

func startAuth(t *testing.T, env map[string]string) *authServer {
	t.Helper()
	dir := t.TempDir()
	full := map[string]string{"ADAPTBOT_ADDR": "127.0.0.1:3000", "ADAPTBOT_USERS": filepath.Join(dir, "users.json")}
	for k, v := range env {
		full[k] = v
	}
	cfg, err := config.Load(func(k string) string { return full[k] })
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := openAuth(context.Background(), cfg, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	a := web.NewAuth(e.auth, authOptions(cfg), log)
	srv := web.NewServer(service.New(service.Deps{Users: e.store, Log: log}), a, nil, edgeOptions(cfg, log))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return &authServer{url: "http://" + ln.Addr().String(), dir: dir, env: full, edge: e, auth: a, log: logBuf}
}

// hit is one request: its headers, and the cookies to send.
type hit struct {
	method, path, body string
	auth, accept       string
	cookies            []*http.Cookie
	header             map[string]string
}

type reply struct {
	status  int
	header  http.Header
	body    string
	cookies map[string]*http.Cookie
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("not JSON (%d): %s", r.status, r.body)
	}
	return m
}

// do sends h without following redirects.
func (s *authServer) do(t *testing.T, h hit) reply {
	t.Helper()
	return send(t, s.url, h)
}

func send(t *testing.T, base string, h hit) reply {
	t.Helper()
	if h.method == "" {
		h.method = "GET"
	}
	req, err := http.NewRequest(h.method, base+h.path, strings.NewReader(h.body))
	if err != nil {
		t.Fatal(err)
	}
	if h.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.auth != "" {
		req.Header.Set("Authorization", h.auth)
	}
	if h.accept != "" {
		req.Header.Set("Accept", h.accept)
	}
	for k, v := range h.header {
		req.Header.Set(k, v)
	}
	for _, c := range h.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", h.method, h.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(b), cookies: map[string]*http.Cookie{}}
	for _, c := range resp.Cookies() {
		r.cookies[c.Name] = c
	}
	return r
}

// addUser adds a user through the API as the admin token and returns the
// key.
func (s *authServer) addUser(t *testing.T, name, role string) string {
	t.Helper()
	r := s.do(t, hit{method: "POST", path: "/api/users", auth: "Bearer " + s.env["ADAPTBOT_ADMIN_TOKEN"], body: `{"name":"` + name + `","role":"` + role + `"}`})
	if r.status != 201 {
		t.Fatalf("add %s: %d %s", name, r.status, r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("an answer with a key may be cached: Cache-Control %q", r.header.Get("Cache-Control"))
	}
	return r.json(t)["key"].(string)
}

func TestOIDCSignInEndToEnd(t *testing.T) {
	iss := oidctest.Start(t, "adaptbot", "client-secret")
	iss.SignInAs(map[string]any{"sub": "77", "email": "Alice@Example.com", "email_verified": true, "groups": []any{"ab-builders"}})
	s := startAuth(t, map[string]string{
		"ADAPTBOT_ADDR":               "0.0.0.0:3000",
		"ADAPTBOT_OIDC_ISSUER":        iss.URL,
		"ADAPTBOT_OIDC_CLIENT_ID":     "adaptbot",
		"ADAPTBOT_OIDC_CLIENT_SECRET": "client-secret",
		"ADAPTBOT_OIDC_ROLES_CLAIM":   "groups:ab-builders=builder",
	})

	// Not signed in: a page is the sign-in page, with 401; the API is a
	// 401 that says what to do.
	page := s.do(t, hit{path: "/tools?x=1", accept: "text/html"})
	if page.status != 401 || !strings.Contains(page.body, `href="/login/oidc?next=%2ftools%3fx%3d1"`) {
		t.Fatalf("a page, not signed in: %d\n%s", page.status, page.body)
	}
	api := s.do(t, hit{path: "/api/requests"})
	if api.status != 401 || !strings.Contains(api.json(t)["error"].(string), "sign in first") || api.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("the API, not signed in: %d %s", api.status, api.body)
	}
	for _, p := range []string{"/healthz", "/login", "/static/app.css"} {
		if r := s.do(t, hit{path: p}); r.status != 200 {
			t.Errorf("%s, not signed in: %d", p, r.status)
		}
	}

	// The browser goes to the provider, and comes back.
	start := s.do(t, hit{path: "/login/oidc?next=/tools%3Fx%3D1"})
	login := start.cookies[auth.LoginCookie]
	if start.status != 303 || !strings.HasPrefix(start.header.Get("Location"), iss.URL+"/authorize?") || login == nil {
		t.Fatalf("/login/oidc: %d %v %v", start.status, start.header, start.cookies)
	}
	if !login.HttpOnly || !login.Secure || login.SameSite != http.SameSiteLaxMode || login.Path != "/login" || login.MaxAge != 600 {
		t.Errorf("the sign-in cookie: %+v", login)
	}
	at := send(t, start.header.Get("Location"), hit{})
	back := at.header.Get("Location")
	if at.status != 302 || !strings.HasPrefix(back, s.url+"/login/callback?") {
		t.Fatalf("the provider: %d %q", at.status, back)
	}
	cb := s.do(t, hit{path: strings.TrimPrefix(back, s.url), cookies: []*http.Cookie{login}})
	sess := cb.cookies[auth.SessionCookie]
	if cb.status != 303 || cb.header.Get("Location") != "/tools?x=1" || sess == nil || sess.Value == "" {
		t.Fatalf("the callback: %d %q %v\n%s", cb.status, cb.header.Get("Location"), cb.cookies, cb.body)
	}
	if !sess.HttpOnly || !sess.Secure || sess.SameSite != http.SameSiteLaxMode || sess.Path != "/" || sess.MaxAge != int((12*time.Hour).Seconds()) {
		t.Errorf("the session cookie: %+v", sess)
	}
	if c := cb.cookies[auth.LoginCookie]; c == nil || c.MaxAge >= 0 {
		t.Errorf("the sign-in cookie is not cleared: %+v", c)
	}

	// Signed in.
	me := s.do(t, hit{path: "/api/me", cookies: []*http.Cookie{sess}}).json(t)
	if me["name"] != "alice@example.com" || me["role"] != "builder" || me["method"] != "session" || !strings.HasPrefix(str(me["pseudonym"]), "u-") {
		t.Errorf("/api/me: %v", me)
	}
	if r := s.do(t, hit{path: "/", accept: "text/html", cookies: []*http.Cookie{sess}}); r.status != 200 || !strings.Contains(r.body, `id="new-chat"`) {
		t.Errorf("the page, signed in: %d %s", r.status, r.body)
	}
	if r := s.do(t, hit{path: "/login", accept: "text/html", cookies: []*http.Cookie{sess}}); !strings.Contains(r.body, `id="who-name">alice@example.com`) || !strings.Contains(r.body, "Sign out") {
		t.Errorf("the sign-in page does not say who is signed in:\n%s", r.body)
	}
	// A callback replayed (the code is spent, the cookie cleared) changes nothing.
	if r := s.do(t, hit{path: strings.TrimPrefix(back, s.url)}); r.status != 401 || r.cookies[auth.SessionCookie] != nil {
		t.Errorf("a replayed callback: %d %v", r.status, r.cookies)
	}

	// Sign out.
	out := s.do(t, hit{method: "POST", path: "/logout", cookies: []*http.Cookie{sess}})
	if c := out.cookies[auth.SessionCookie]; out.status != 200 || c == nil || c.Value != "" || c.MaxAge >= 0 {
		t.Errorf("sign-out: %d %+v", out.status, c)
	}
	if r := s.do(t, hit{path: "/logout"}); r.status != 303 || r.header.Get("Location") != "/login" {
		t.Errorf("GET /logout: %d %q", r.status, r.header.Get("Location"))
	}
}

func TestBadCredentialsAre401AndChangeNothing(t *testing.T) {
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "tok-123-admin-token", "ADAPTBOT_SESSION_TTL": "1ns"})
	bob := s.addUser(t, "bob", "builder")
	gone := s.addUser(t, "gone", "user")
	if r := s.do(t, hit{method: "DELETE", path: "/api/users/gone", auth: "Bearer tok-123-admin-token"}); r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	// Many refusals follow from one address: the throttle is not what
	// this test is about (TestFailedCredentialsAreThrottled is).
	s.auth.Throttle().Free = 100
	login := s.do(t, hit{method: "POST", path: "/login/key", body: `{"key":"` + bob + `"}`})
	expired := login.cookies[auth.SessionCookie]
	if login.status != 200 || expired == nil {
		t.Fatalf("key sign-in: %d %s", login.status, login.body)
	}
	usersFile := filepath.Join(s.dir, "users.json")
	before, _ := os.ReadFile(usersFile)
	forged := &http.Cookie{Name: auth.SessionCookie, Value: strings.Replace(expired.Value, "v2.e", "v2.f", 1)}
	for _, tt := range []struct {
		what   string
		h      hit
		status int
		msg    string
	}{
		{"unknown key", hit{path: "/api/requests", auth: "Bearer adaptbot_AAAA"}, 401, "this key is not valid"},
		{"a removed user's key", hit{path: "/api/requests", auth: "Bearer " + gone}, 401, "this key is not valid"},
		{"a removed user's key at sign-in", hit{method: "POST", path: "/login/key", body: `{"key":"` + gone + `"}`}, 401, "not valid"},
		{"an expired session", hit{path: "/api/requests", cookies: []*http.Cookie{expired}}, 401, "expired"},
		{"a forged session", hit{path: "/api/requests", cookies: []*http.Cookie{forged}}, 401, "not valid here"},
		{"a role that does not exist", hit{method: "POST", path: "/api/users", auth: "Bearer tok-123-admin-token", body: `{"name":"carol","role":"superuser"}`}, 400, `no role named "superuser"`},
		{"a duplicate user", hit{method: "POST", path: "/api/users", auth: "Bearer tok-123-admin-token", body: `{"name":"BOB","role":"admin"}`}, 409, `"bob" exists already`},
		{"a bad name", hit{method: "POST", path: "/api/users", auth: "Bearer tok-123-admin-token", body: `{"name":"a b","role":"user"}`}, 400, "may hold letters"},
		{"an unknown field", hit{method: "POST", path: "/api/users", auth: "Bearer tok-123-admin-token", body: `{"name":"carol","role":"user","key":"mine"}`}, 400, `unknown field "key"`},
		{"rotating nobody", hit{method: "POST", path: "/api/users/nobody/rotate", auth: "Bearer tok-123-admin-token"}, 404, `no user named "nobody"`},
		{"a builder managing users", hit{method: "POST", path: "/api/users", auth: "Bearer " + bob, body: `{"name":"carol","role":"admin"}`}, 403, "needs the admin role; bob has the builder role"},
		{"a builder listing users", hit{path: "/api/users", auth: "Bearer " + bob}, 403, "needs the admin role"},
	} {
		r := s.do(t, tt.h)
		if r.status != tt.status || !strings.Contains(str(r.json(t)["error"]), tt.msg) {
			t.Errorf("%s: %d %s; want %d saying %q", tt.what, r.status, r.body, tt.status, tt.msg)
		}
		if tt.h.cookies != nil {
			if c := r.cookies[auth.SessionCookie]; c == nil || c.MaxAge >= 0 {
				t.Errorf("%s: the bad cookie is not cleared: %+v", tt.what, c)
			}
		}
	}
	after, _ := os.ReadFile(usersFile)
	if string(before) != string(after) {
		t.Errorf("bad requests changed the users file:\n%s\n%s", before, after)
	}
	// A bad cookie does not keep anyone from the sign-in page.
	if r := s.do(t, hit{path: "/login", cookies: []*http.Cookie{forged}}); r.status != 200 {
		t.Errorf("/login with a forged cookie: %d", r.status)
	}
}

func TestKeysRotateAndRolesOverHTTP(t *testing.T) {
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "tok-123-admin-token"})
	key := s.addUser(t, "dana", "user")
	me := s.do(t, hit{path: "/api/me", auth: "Bearer " + key}).json(t)
	if me["name"] != "dana" || me["role"] != "user" || me["method"] != "key" {
		t.Fatalf("/api/me with a key: %v", me)
	}
	if can := str(me["can"]); !strings.Contains(can, `"chat"`) || strings.Contains(can, `"build"`) {
		t.Errorf("a user's actions: %s", can)
	}
	// A key typed into the sign-in page: the session ends with a rotation.
	sess := s.do(t, hit{method: "POST", path: "/login/key", body: `{"key":"` + key + `"}`}).cookies[auth.SessionCookie]
	if sess == nil || !sess.Secure || !sess.HttpOnly {
		t.Fatalf("key sign-in cookie: %+v", sess)
	}
	r := s.do(t, hit{method: "POST", path: "/api/users/dana/rotate", auth: "Bearer tok-123-admin-token"})
	newKey, _ := r.json(t)["key"].(string)
	if r.status != 200 || newKey == "" || newKey == key {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	if r := s.do(t, hit{path: "/api/me", auth: "Bearer " + key}); r.status != 401 {
		t.Errorf("the rotated-out key: %d", r.status)
	}
	if r := s.do(t, hit{path: "/api/me", cookies: []*http.Cookie{sess}}); r.status != 401 || !strings.Contains(r.body, "rotated") {
		t.Errorf("a session signed in with the rotated-out key: %d %s", r.status, r.body)
	}
	if r := s.do(t, hit{method: "PATCH", path: "/api/users/dana", auth: "Bearer tok-123-admin-token", body: `{"role":"admin"}`}); r.status != 200 {
		t.Fatalf("set role: %d %s", r.status, r.body)
	}
	if me := s.do(t, hit{path: "/api/me", auth: "Bearer " + newKey}).json(t); me["role"] != "admin" {
		t.Errorf("after the role change: %v", me)
	}
	list := s.do(t, hit{path: "/api/users", auth: "Bearer " + newKey})
	if list.status != 200 || !strings.Contains(list.body, `"dana"`) || strings.Contains(list.body, "key_hash") {
		t.Errorf("the list: %d %s", list.status, list.body)
	}
}

func TestTrustedHeaderOverHTTP(t *testing.T) {
	hdr := map[string]string{"X-Forwarded-User": "erin@example.com"}
	// The test's client is on 127.0.0.1: trusted in the first server, not
	// in the second.
	for _, tt := range []struct {
		proxies string
		want    int
	}{{"127.0.0.1", 200}, {"10.0.0.0/8, 192.0.2.1", 401}} {
		s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_TRUSTED_HEADER": "X-Forwarded-User", "ADAPTBOT_TRUSTED_PROXIES": tt.proxies})
		r := s.do(t, hit{path: "/api/me", header: hdr})
		if r.status != tt.want {
			t.Errorf("proxies %s: %d %s, want %d", tt.proxies, r.status, r.body, tt.want)
		}
		if tt.want == 200 {
			if id := r.json(t); id["name"] != "erin@example.com" || id["method"] != "header" || id["role"] != "user" {
				t.Errorf("from a trusted proxy: %v", id)
			}
		}
	}
}

func TestSingleUserOnLoopbackAndRefusalBeyond(t *testing.T) {
	s := startAuth(t, nil)
	id := s.do(t, hit{path: "/api/me"}).json(t)
	if id["name"] != "local" || id["role"] != "admin" || id["method"] != "loopback" {
		t.Errorf("loopback, nothing configured: %v", id)
	}
	// Adding a user there says the server stays single-user until restart.
	r := s.do(t, hit{method: "POST", path: "/api/users", body: `{"name":"first","role":"admin"}`})
	if r.status != 201 || !strings.Contains(str(r.json(t)["note"]), "until it restarts") {
		t.Errorf("adding to a single-user server: %d %s", r.status, r.body)
	}
	if !strings.Contains(s.auth.Describe(), "single user") {
		t.Errorf("describe: %s", s.auth.Describe())
	}

	// Beyond loopback with nothing configured: refused, saying what to set.
	cfg, _ := config.Load(func(k string) string {
		return map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_USERS": filepath.Join(t.TempDir(), "users.json")}[k]
	})
	_, err := openAuth(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	for _, want := range []string{"beyond loopback", "ADAPTBOT_ADMIN_TOKEN", "adaptbot users add", "ADAPTBOT_OIDC_ISSUER", "ADAPTBOT_TRUSTED_HEADER"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no identity beyond loopback: %v; want it to say %q", err, want)
		}
	}
	// A user in the file is enough: the file that single-user server wrote.
	s.edge.Close()
	cfg.Identity.Users = s.env["ADAPTBOT_USERS"]
	e, err := openAuth(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("beyond loopback with a user: %v", err)
	}
	e.Close()
}

// TestKeysAppearInNoFileAndNoLog: whatever happens to keys (made through
// the API and the CLI, rotated, typed into the sign-in page, refused), the
// plain text is in no file under the server's folder and not in its log.
func TestKeysAppearInNoFileAndNoLog(t *testing.T) {
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "tok-123-admin-token"})
	var keys []string
	for _, n := range []string{"u1", "u2", "u3"} {
		keys = append(keys, s.addUser(t, n, "builder"))
	}
	r := s.do(t, hit{method: "POST", path: "/api/users/u2/rotate", auth: "Bearer tok-123-admin-token"})
	keys = append(keys, r.json(t)["key"].(string))
	for _, k := range keys {
		s.do(t, hit{method: "POST", path: "/login/key", body: `{"key":"` + k + `"}`})
		s.do(t, hit{path: "/api/requests", auth: "Bearer " + k})
	}
	// A key through the CLI, with no server: straight into the file.
	dir := t.TempDir()
	var out strings.Builder
	env := map[string]string{"ADAPTBOT_ADDR": "127.0.0.1:1", "ADAPTBOT_USERS": filepath.Join(dir, "users.json")}
	if err := run(context.Background(), []string{"adaptbot", "users", "add", "cli-user", "--role", "user", "--format", "json"},
		func(k string) string { return env[k] }, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var added struct{ Key string }
	json.Unmarshal([]byte(out.String()), &added)
	if !strings.HasPrefix(added.Key, users.KeyPrefix) {
		t.Fatalf("the CLI's key: %s", out.String())
	}
	keys = append(keys, added.Key)

	for _, root := range []string{s.dir, dir} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, _ := os.ReadFile(p)
			for _, k := range keys {
				if strings.Contains(string(b), strings.TrimPrefix(k, users.KeyPrefix)) {
					t.Errorf("%s holds a plain key", p)
				}
			}
			return nil
		})
	}
	log := s.log.String()
	if !strings.Contains(log, "user added") {
		t.Fatalf("the log has no user lines, so this test checks nothing:\n%s", log)
	}
	for _, k := range keys {
		if strings.Contains(log, strings.TrimPrefix(k, users.KeyPrefix)) {
			t.Errorf("the log holds a plain key:\n%s", log)
		}
	}
	if strings.Contains(log, "u1") || strings.Contains(log, "tok-123-admin-token") {
		t.Errorf("the log names a user or holds the token (it should say pseudonyms):\n%s", log)
	}
}

// TestReplicasShareUsers: two replicas' identity pieces on one NATS. The
// first seeds the empty bucket from its files (users and secret), so keys
// made before the cluster keep working; a key added on one works on the
// other, and a removal on one holds on the other.
func TestReplicasShareUsers(t *testing.T) {
	srv := clustertest.Start(t)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	open := func(usersFile string) *people {
		t.Helper()
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "tok-for-the-cluster", "ADAPTBOT_NATS_URL": srv.URL(), "ADAPTBOT_USERS": usersFile}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		link, err := cluster.OpenLink(cluster.Options{URL: cfg.NATSURL, Log: log}, cfg.ReplicaID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(link.Close)
		e, err := openAuth(ctx, cfg, link, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	// Before the cluster: a key on files.
	fileA := filepath.Join(t.TempDir(), "users.json")
	env := map[string]string{"ADAPTBOT_ADDR": "127.0.0.1:1", "ADAPTBOT_USERS": fileA}
	out, err := usersCLI(t, env, "add", "early", "--role", "builder")
	early := keyRE.FindString(out)
	if err != nil || early == "" {
		t.Fatalf("users add: %v %s", err, out)
	}

	a, b := open(fileA), open(filepath.Join(t.TempDir(), "users.json"))
	check := func(e *people, key string) bool {
		id, err := e.auth.Authenticate(auth.Request{Authorization: "Bearer " + key})
		return err == nil && id.Known()
	}
	if !check(b, early) {
		t.Fatal("a key made on files before the cluster does not work on the other replica")
	}
	_, key, err := a.store.Add(ctx, "late", identity.User)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's new key works on B", func() bool { return check(b, key) })
	if _, err := b.store.Remove(ctx, "early"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "B's removal holds on A", func() bool { return !check(a, early) })
	// Sessions and pseudonyms agree: one secret, and the sessions ride
	// on the user's record.
	cookie, _, err := a.auth.KeyLogin(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "A's session works on B", func() bool {
		id, err := b.auth.Authenticate(auth.Request{Session: cookie})
		return err == nil && id.Name == "late"
	})
	// Signed out on B, it ends on A.
	if err := b.auth.SignOut(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a sign-out on B holds on A", func() bool {
		id, err := a.auth.Authenticate(auth.Request{Session: cookie})
		return err != nil && !id.Known()
	})
}

// testAuth opens the identity edge for a server built by hand (NewServer in
// a test), over a users file in a temporary folder.
func testAuth(tb testing.TB, cfg config.Config) *web.Auth {
	a, _ := testUsers(tb, cfg)
	return a
}

// testUsers is testAuth with the users behind it, to add some.
func testUsers(tb testing.TB, cfg config.Config) (*web.Auth, *users.Store) {
	tb.Helper()
	cfg.Identity.Users = filepath.Join(tb.TempDir(), "users.json")
	e, err := openAuth(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return web.NewAuth(e.auth, authOptions(cfg), slog.New(slog.DiscardHandler)), e.store
}

// TestRefusalsAPersonSeesArePages: a person whose browser opens a page
// they may not see, or one that does not exist, reads why on a page, not
// as JSON; the API still answers JSON, whatever the client accepts.
func TestRefusalsAPersonSeesArePages(t *testing.T) {
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "tok-123-admin-token"})
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "erin", "role": "builder"}`,
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer tok-123-admin-token"})
	var added struct{ Key string }
	if json.Unmarshal(raw, &added); code != 201 || added.Key == "" {
		t.Fatalf("add a builder: %d %s", code, raw)
	}
	browser := map[string]string{"Authorization": "Bearer " + added.Key, "Accept": "text/html,application/xhtml+xml"}
	code, h, raw := in.send(t, "GET", "/dashboard", "", browser)
	if body := string(raw); code != 403 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "Not allowed") || !strings.Contains(body, "admin role") {
		t.Errorf("the dashboard for a builder: %d %s\n%s", code, h.Get("Content-Type"), body)
	}
	code, _, raw = in.send(t, "GET", "/no-such-page", "", browser)
	if body := string(raw); code != 404 || !strings.Contains(body, "There is no page at /no-such-page.") || strings.Contains(body, "Cannot GET") {
		t.Errorf("a missing page: %d %s", code, body)
	}
	code, h, raw = in.send(t, "GET", "/api/benchmarks", "", browser)
	if code != 403 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("the API for a builder asking for HTML: %d %s %s", code, h.Get("Content-Type"), raw)
	}
}
