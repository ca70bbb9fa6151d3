package cli

import (
	"errors"
	"net"
	"os"
	"path/filepath"
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
