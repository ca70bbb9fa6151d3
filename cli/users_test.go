package cli

import (
	"bytes"
	"errors"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"adaptbot/config"
	"adaptbot/homelock"
)

// closedAddr is a loopback address no server answers at.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// homeEnv is a command's Env over the folder dir, with no server at
// ADAPTBOT_ADDR.
func homeEnv(t *testing.T, dir string, stdout, stderr *strings.Builder) Env {
	t.Helper()
	vars := map[string]string{"ADAPTBOT_HOME": dir, "ADAPTBOT_ADDR": closedAddr(t)}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return Env{Config: cfg, Getenv: func(k string) string { return vars[k] }, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr}
}

// TestUsersWithoutServerTakeTheFolder: with no server answering, `users`
// changes the users file only as the folder's one writer. A server that
// holds the folder but does not answer yet (still starting) makes it
// refuse, writing nothing; with the folder free, the change is made, and a
// server starting meanwhile could not take the folder.
func TestUsersWithoutServerTakeTheFolder(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	e := homeEnv(t, dir, &stdout, &stderr)
	users := e.Config.Identity.Users

	server, err := homelock.Acquire(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	err = usersCommand(t.Context(), e, []string{"add", "ann", "--role", "admin"})
	if err == nil || !strings.Contains(err.Error(), "run this again once it listens") {
		t.Errorf("with the folder held: err = %v, want a refusal that says to wait for the server", err)
	}
	if _, err := os.Stat(users); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with the folder held, %s was written (stat: %v)", filepath.Base(users), err)
	}
	server.Release()

	if err := usersCommand(t.Context(), e, []string{"add", "ann", "--role", "admin"}); err != nil {
		t.Fatalf("with the folder free: %v", err)
	}
	if !strings.Contains(stdout.String(), "Added ann (admin).") {
		t.Errorf("stdout = %q", stdout.String())
	}
	if _, held, _ := homelock.Read(dir); held {
		t.Error("the folder is still held after the command")
	}
}

// TestUsersListWithoutServerOnlyReads: with no server answering, `users
// list` reads the users file and changes nothing: it takes no lock, so it
// lists beside a server still starting (which holds the folder and the
// users file), and writes no file, not even the server's secret.
func TestUsersListWithoutServerOnlyReads(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	e := homeEnv(t, dir, &stdout, &stderr)
	if err := usersCommand(t.Context(), e, []string{"list"}); err != nil || !strings.Contains(stdout.String(), "No users yet") {
		t.Errorf("list with no users file: %v\n%s", err, stdout.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("list with no users file wrote %d entries, the first %s", len(entries), entries[0].Name())
	}
	if err := usersCommand(t.Context(), e, []string{"add", "ann", "--role", "admin"}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	server, err := homelock.Acquire(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Release()
	usersLock, err := os.OpenFile(e.Config.Identity.Users+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer usersLock.Close()
	if held, err := homelock.TryLock(usersLock); err != nil || held {
		t.Fatalf("lock the users file: held %v, %v", held, err)
	}
	stdout.Reset()
	if err := usersCommand(t.Context(), e, []string{"list", "--format", "json"}); err != nil {
		t.Fatalf("list beside a server still starting: %v", err)
	}
	if !strings.Contains(stdout.String(), `"name": "ann"`) || !strings.Contains(stdout.String(), `"pseudonym": "u-`) {
		t.Errorf("list = %s; want ann with her pseudonym", stdout.String())
	}
	server.Release()
	usersLock.Close()
	if after := snapshot(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Errorf("list changed the folder: %v, then %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

// snapshot is every file under dir, by path, with its content; lock files
// (whose content says who held them last) are left out.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".lock") {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
