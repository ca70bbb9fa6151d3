package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/auth"
	"adaptbot/config"
)

// TestSignOutEndsTheSessionOnTheServer: only POST /logout signs out, and
// then the cookie replayed signs nobody in; an admin lists and ends a
// user's sessions.
func TestSignOutEndsTheSessionOnTheServer(t *testing.T) {
	const tok = "tok-123-admin-token"
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": tok})
	bob := s.addUser(t, "bob", "builder")
	login := func() *http.Cookie {
		t.Helper()
		r := s.do(t, hit{method: "POST", path: "/login/key", body: `{"key":"` + bob + `"}`})
		if r.status != 200 || r.cookies[auth.SessionCookie] == nil {
			t.Fatalf("key sign-in: %d %s", r.status, r.body)
		}
		return r.cookies[auth.SessionCookie]
	}
	works := func(c *http.Cookie) bool {
		return s.do(t, hit{path: "/api/requests", cookies: []*http.Cookie{c}}).status == 200
	}
	one := login()
	if r := s.do(t, hit{path: "/logout", cookies: []*http.Cookie{one}}); r.status != 303 || !works(one) {
		t.Errorf("GET /logout: %d, and the session works: %v; want a redirect that signs nobody out", r.status, works(one))
	}
	if r := s.do(t, hit{method: "POST", path: "/logout", cookies: []*http.Cookie{one}}); r.status != 200 {
		t.Fatalf("POST /logout: %d %s", r.status, r.body)
	}
	if works(one) {
		t.Error("the cookie replayed after POST /logout still works")
	}

	// An admin lists bob's sessions and ends them.
	two, three := login(), login()
	as := "Bearer " + tok
	list := s.do(t, hit{path: "/api/users/bob/sessions", auth: as}).json(t)
	sessions, _ := list["sessions"].([]any)
	if len(sessions) != 2 {
		t.Fatalf("sessions of bob: %v", list)
	}
	first := str(sessions[0].(map[string]any)["id"])
	if r := s.do(t, hit{method: "DELETE", path: "/api/users/bob/sessions/" + first, auth: as}); r.status != 200 || r.json(t)["ended"] != float64(1) {
		t.Errorf("end one session: %d %s", r.status, r.body)
	}
	if works(two) || !works(three) {
		t.Errorf("after ending the first session: two works %v, three works %v", works(two), works(three))
	}
	if r := s.do(t, hit{method: "DELETE", path: "/api/users/bob/sessions", auth: as}); r.status != 200 || works(three) {
		t.Errorf("end every session: %d %s; three works %v", r.status, r.body, works(three))
	}
	if r := s.do(t, hit{path: "/api/users/bob/sessions", auth: "Bearer " + bob}); r.status != 403 {
		t.Errorf("a builder listing sessions: %d", r.status)
	}
	// The CLI lists them too, through the server.
	four := login()
	_ = four
	env := map[string]string{"ADAPTBOT_ADDR": strings.TrimPrefix(s.url, "http://"), "ADAPTBOT_KEY": tok, "ADAPTBOT_USERS": filepath.Join(t.TempDir(), "users.json")}
	out, err := usersCLI(t, env, "sessions", "bob")
	if err != nil || !strings.Contains(out, "key") || strings.Count(out, "\n") != 2 {
		t.Errorf("users sessions bob: %v\n%s", err, out)
	}
	if out, err := usersCLI(t, env, "sessions", "bob", "--end", "all"); err != nil || !strings.Contains(out, "Ended 1") || works(four) {
		t.Errorf("users sessions bob --end all: %v\n%s", err, out)
	}
}

// TestFailedCredentialsAreThrottled: past the free failures an address
// waits (429, Retry-After), even with a good key; each failure is logged
// without the credential.
func TestFailedCredentialsAreThrottled(t *testing.T) {
	const tok = "tok-123-admin-token"
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": tok})
	bad := "adaptbot_guessedGUESSEDguessedGUESSEDguessedGUESSED1"
	for i := range auth.DefaultThrottleFree + 1 {
		if r := s.do(t, hit{path: "/api/requests", auth: "Bearer " + bad}); r.status != 401 {
			t.Fatalf("failure %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := s.do(t, hit{path: "/api/requests", auth: "Bearer " + tok})
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "failed sign-ins") {
		t.Errorf("a good key from a throttled address: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if r := s.do(t, hit{method: "POST", path: "/login/key", body: `{"key":"` + tok + `"}`}); r.status != 429 {
		t.Errorf("a key sign-in from a throttled address: %d", r.status)
	}
	// Without credentials the public pages still answer.
	if r := s.do(t, hit{path: "/login"}); r.status != 200 {
		t.Errorf("/login from a throttled address: %d", r.status)
	}
	log := s.log.String()
	if !strings.Contains(log, "credentials refused") || strings.Contains(log, bad) || strings.Contains(log, "guessed") {
		t.Errorf("the log of failed credentials:\n%s", log)
	}
}

// TestShortTokensAndCatchAllProxies: beyond loopback an admin or metrics
// token under 16 characters stops the server with a clear message (on
// loopback it does not); a trusted proxy range of every address is warned
// about.
func TestShortTokensAndCatchAllProxies(t *testing.T) {
	open := func(env map[string]string) (*syncBuffer, error) {
		full := map[string]string{"ADAPTBOT_USERS": filepath.Join(t.TempDir(), "users.json")}
		for k, v := range env {
			full[k] = v
		}
		cfg, err := config.Load(func(k string) string { return full[k] })
		if err != nil {
			t.Fatal(err)
		}
		buf := &syncBuffer{}
		e, err := openAuth(context.Background(), cfg, nil, slog.New(slog.NewTextHandler(buf, nil)))
		if err == nil {
			e.Close()
		}
		return buf, err
	}
	for _, name := range []string{"ADAPTBOT_ADMIN_TOKEN", "ADAPTBOT_METRICS_TOKEN"} {
		env := map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "long-enough-admin-token", name: "short"}
		if _, err := open(env); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "at least 16") {
			t.Errorf("a short %s beyond loopback: %v", name, err)
		}
		env["ADAPTBOT_ADDR"] = "127.0.0.1:3000"
		if _, err := open(env); err != nil {
			t.Errorf("a short %s on loopback: %v", name, err)
		}
	}
	log, err := open(map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_TRUSTED_HEADER": "X-Forwarded-User", "ADAPTBOT_TRUSTED_PROXIES": "10.0.0.5, ::/0"})
	if err != nil || !strings.Contains(log.String(), "::/0, every address") {
		t.Errorf("a catch-all proxy range: %v\n%s", err, log)
	}
}

// TestTrustedHeaderDuplicatedOrReserved: over HTTP, a trusted header sent
// twice, or naming one of our own identities, is refused.
func TestTrustedHeaderDuplicatedOrReserved(t *testing.T) {
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_TRUSTED_HEADER": "X-Forwarded-User", "ADAPTBOT_TRUSTED_PROXIES": "127.0.0.1"})
	get := func(values ...string) reply {
		req, _ := http.NewRequest("GET", s.url+"/api/requests", nil)
		for _, v := range values {
			req.Header.Add("X-Forwarded-User", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return reply{status: resp.StatusCode}
	}
	if r := get("erin@example.com"); r.status != 200 {
		t.Fatalf("one header: %d", r.status)
	}
	if r := get("erin@example.com", "mallory@example.com"); r.status != 401 {
		t.Errorf("a duplicated header: %d, want 401", r.status)
	}
	for _, name := range []string{"admin-token", "local", "AdaptBot"} {
		if r := get(name); r.status != 401 {
			t.Errorf("the header naming %s: %d, want 401", name, r.status)
		}
	}
}
