package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/cli"
)

// usersCLI runs `adaptbot users ARGS...` with env and returns its output.
func usersCLI(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(context.Background(), append([]string{"adaptbot", "users"}, args...), func(k string) string { return env[k] },
		strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

var keyRE = regexp.MustCompile(`adaptbot_[A-Za-z0-9_-]{43}`)

func TestUsersCommandThroughTheServer(t *testing.T) {
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_ADMIN_TOKEN": "tok-123-admin-token"})
	u, _ := url.Parse(s.url)
	// The CLI's own folder is elsewhere: everything goes through the server.
	env := map[string]string{"ADAPTBOT_ADDR": u.Host, "ADAPTBOT_KEY": "tok-123-admin-token", "ADAPTBOT_USERS": filepath.Join(t.TempDir(), "users.json")}

	out, err := usersCLI(t, env, "add", "Hana", "--role", "builder")
	key := keyRE.FindString(out)
	if err != nil || key == "" || !strings.Contains(out, "Added hana (builder)") || !strings.Contains(out, "shown this once") {
		t.Fatalf("users add: %v\n%s", err, out)
	}
	if strings.Contains(out, "directly") {
		t.Errorf("users add went around a running server:\n%s", out)
	}
	if me := s.do(t, hit{path: "/api/me", auth: "Bearer " + key}).json(t); me["name"] != "hana" || me["role"] != "builder" {
		t.Errorf("the printed key: %v", me)
	}
	if out, err := usersCLI(t, env, "list"); err != nil || !regexp.MustCompile(`hana\s+builder\s+u-`).MatchString(out) || keyRE.MatchString(out) {
		t.Errorf("users list: %v\n%s", err, out)
	}
	if out, err := usersCLI(t, env, "role", "hana", "admin"); err != nil || !strings.Contains(out, "hana is now admin") {
		t.Errorf("users role: %v\n%s", err, out)
	}
	out, err = usersCLI(t, env, "rotate", "hana", "--format", "json")
	key2 := keyRE.FindString(out)
	if err != nil || key2 == "" || key2 == key {
		t.Fatalf("users rotate: %v\n%s", err, out)
	}
	if r := s.do(t, hit{path: "/api/me", auth: "Bearer " + key}); r.status != 401 {
		t.Errorf("the old key after rotate: %d", r.status)
	}

	// Refusals, each with its reason.
	for _, tt := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env, []string{"add", "ivan"}, "--role is required"},
		{env, []string{"add", "ivan", "--role", "root"}, `no role named "root"`},
		{env, []string{"add", "hana", "--role", "user"}, `"hana" exists already`},
		{env, []string{"remove", "hana"}, "add --yes"},
		{env, []string{"rotate", "nobody"}, `no user named "nobody"`},
		{map[string]string{"ADAPTBOT_ADDR": u.Host, "ADAPTBOT_KEY": key2 + "x"}, []string{"list"}, "this key is not valid"},
		{map[string]string{"ADAPTBOT_ADDR": u.Host}, []string{"list"}, "sign in first"},
	} {
		out, err := usersCLI(t, tt.env, tt.args...)
		if err == nil || !strings.Contains(err.Error()+out, tt.want) {
			t.Errorf("users %v: %v\n%s; want %q", tt.args, err, out, tt.want)
		}
	}
	// A builder's own key may not manage users.
	bkey := s.addUser(t, "jo", "builder")
	if _, err := usersCLI(t, map[string]string{"ADAPTBOT_ADDR": u.Host, "ADAPTBOT_KEY": bkey}, "add", "kim", "--role", "admin"); err == nil ||
		!strings.Contains(err.Error(), "needs the admin role") {
		t.Errorf("a builder adding an admin: %v", err)
	}

	if out, err := usersCLI(t, env, "remove", "hana", "--yes"); err != nil || !strings.Contains(out, "Removed hana") {
		t.Errorf("users remove: %v\n%s", err, out)
	}
	if r := s.do(t, hit{path: "/api/me", auth: "Bearer " + key2}); r.status != 401 {
		t.Errorf("a removed user's key: %d", r.status)
	}
}

func TestUsersCommandWithoutAServer(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"ADAPTBOT_ADDR": "127.0.0.1:1", "ADAPTBOT_USERS": filepath.Join(dir, "users.json")}
	out, err := usersCLI(t, env, "add", "first", "--role", "admin")
	key := keyRE.FindString(out)
	if err != nil || key == "" || !strings.Contains(out, "using "+env["ADAPTBOT_USERS"]+" directly") {
		t.Fatalf("users add with no server: %v\n%s", err, out)
	}
	if out, err := usersCLI(t, env, "list"); err != nil || !strings.Contains(out, "first") {
		t.Errorf("users list with no server: %v\n%s", err, out)
	}

	// The server that then starts beyond loopback knows the key.
	s := startAuth(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:3000", "ADAPTBOT_USERS": env["ADAPTBOT_USERS"]})
	if me := s.do(t, hit{path: "/api/me", auth: "Bearer " + key}).json(t); me["name"] != "first" || me["role"] != "admin" {
		t.Errorf("the server after users add: %v", me)
	}
	// While the server holds the file (here: not answering at the CLI's
	// address), the CLI does not write it.
	_, err = usersCLI(t, env, "add", "second", "--role", "user")
	if err == nil || !strings.Contains(err.Error(), "the server holds") {
		t.Errorf("users add while the server holds the file: %v", err)
	}
	if _, ok := s.edge.store.Lookup("second"); ok {
		t.Error("the CLI wrote past the server")
	}
	// In a cluster the users are the cluster's: no direct writes.
	env["ADAPTBOT_NATS_URL"] = "nats://127.0.0.1:1"
	if _, err := usersCLI(t, env, "add", "third", "--role", "user"); err == nil || !strings.Contains(err.Error(), "in a cluster") {
		t.Errorf("users add in a cluster with no server: %v", err)
	}
	var ue *cli.ExitError
	if _, err := usersCLI(t, env, "frobnicate"); !errors.As(err, &ue) || ue.Code != 2 {
		t.Errorf("an unknown subcommand: %v", err)
	}
	if out, err := usersCLI(t, env, "--help"); err != nil || !strings.Contains(out, "adaptbot users add NAME --role") {
		t.Errorf("users --help: %v %s", err, out)
	}
}

// TestUsersAPIWritesItsRows: the users API is a service operation, so each
// change through it leaves one row (intent MANAGE, category users_<what>),
// attributed to whoever made it and naming the user by pseudonym only; a
// refused change leaves its row too. No row holds the name or a key.
func TestUsersAPIWritesItsRows(t *testing.T) {
	in := start(t, nil)
	code, body := in.do(t, "POST", "/api/users", `{"name":"Pat","role":"builder"}`)
	key, _ := body["key"].(string)
	if code != 201 || key == "" {
		t.Fatalf("add: %d %v", code, body)
	}
	pseudonym := str(body["user"].(map[string]any)["pseudonym"])
	for _, r := range []struct{ method, path, body string }{
		{"PATCH", "/api/users/pat", `{"role":"user"}`},
		{"POST", "/api/users/pat/rotate", ""},
		{"GET", "/api/users", ""}, // a read: no row
		{"DELETE", "/api/users/pat", ""},
	} {
		if code, body := in.do(t, r.method, r.path, r.body); code != 200 {
			t.Fatalf("%s %s: %d %v", r.method, r.path, code, body)
		}
	}
	if code, _ := in.do(t, "POST", "/api/users", `{"name":"pat","role":"root"}`); code != 400 {
		t.Fatalf("a bad role: %d", code)
	}
	var got []string
	for _, r := range in.rows(t) {
		if r["intent"] != adaptbot.IntentManage {
			continue
		}
		got = append(got, r["category"]+":"+r["error_kind"])
		if r["user"] == "" || r["door"] != "http" {
			t.Errorf("row not attributed: %v", r)
		}
		for _, secret := range []string{"pat", key} {
			if strings.Contains(strings.ToLower(fmt.Sprint(r)), secret) {
				t.Errorf("a row holds %q: %v", secret, r)
			}
		}
	}
	want := []string{"users_add:", "users_role:", "users_rotate:", "users_remove:", "users_add:invalid"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if rows := in.rows(t); !strings.Contains(fmt.Sprint(rows), "users role "+pseudonym) {
		t.Errorf("the role change's row does not name %s: %v", pseudonym, rows)
	}
}
