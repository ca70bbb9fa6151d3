//go:build unix

package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"adaptbot/mcp/config"
	"adaptbot/poll"
)

// gone reports whether process pid has exited. One that has exited but has
// not been waited for yet counts as gone: an orphan is its init's to wait
// for, and some inits never do.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false // no /proc: not gone while it can be signalled
	}
	// The state follows the command, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// grandchildServer is a stdio server started as npx or a shell script
// starts the real one: a shell that leaves a child behind (a long sleep,
// its pid appended to pids) and then becomes the helper server.
func grandchildServer(t *testing.T, pids string) config.Server {
	t.Helper()
	cfg := helperConfig(t, "wrapped")
	script := `sleep 600 </dev/null >/dev/null 2>&1 & echo $! >>"$PIDS"; exec "$HELPER" -test.run='^$'`
	cfg.Env["PIDS"] = pids
	cfg.Env["HELPER"] = cfg.Command
	cfg.Command, cfg.Args = "sh", []string{"-c", script}
	return cfg
}

// pidsIn reads the pids the wrapped servers left behind.
func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pid)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // if the test fails
	}
	return out
}

// The processes a stdio server starts go with it: when the hub replaces a
// server that exited, and when the hub closes.
func TestHubStopsTheServersProcessGroup(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	h := NewHub([]config.Server{grandchildServer(t, pids)}, Options{Timeout: 10 * time.Second})
	t.Cleanup(func() { h.Close() })
	ctx := context.Background()

	if _, err := h.Call(ctx, "wrapped", "pid", nil); err != nil {
		t.Fatal(err)
	}
	first := pidsIn(t, pids)
	if len(first) != 1 || gone(first[0]) {
		t.Fatalf("pids %v: want one running grandchild", first)
	}

	// The server exits by itself, leaving its child; reconnecting stops
	// what is left of the old server's group.
	if _, err := h.Call(ctx, "wrapped", "exit_soon", nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the session to end", func() bool { _, _, ok := h.byName["wrapped"].live(); return !ok })
	if _, err := h.Call(ctx, "wrapped", "pid", nil); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the first server's grandchild to be stopped", func() bool { return gone(first[0]) })

	both := pidsIn(t, pids)
	if len(both) != 2 || gone(both[1]) {
		t.Fatalf("pids %v: want a second running grandchild", both)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the second server's grandchild to be stopped", func() bool { return gone(both[1]) })
}

// A server whose command exits without a word while connecting leaves no
// child behind either.
func TestHubStopsTheGroupOfAServerThatFailsToConnect(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	script := `sleep 600 </dev/null >/dev/null 2>&1 & echo $! >>"$PIDS"; exit 3`
	cfg := config.Server{Name: "fails", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", script}, Env: map[string]string{"PIDS": pids}}
	h := NewHub([]config.Server{cfg}, Options{Timeout: 10 * time.Second})
	if errs := h.Connect(context.Background()); len(errs) != 1 || !strings.Contains(errs[0].Error(), "exit status 3") {
		t.Fatalf("errs = %v", errs)
	}
	h.Close()
	left := pidsIn(t, pids)
	poll.Until(t, "the failed server's child to be stopped", func() bool { return gone(left[0]) })
}
