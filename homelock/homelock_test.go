package homelock_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"adaptbot/homelock"
)

// TestMain lets the test binary be the process that holds a lock: with
// HOMELOCK_TEST_HOLD set to a folder it locks it, says "locked" and waits to
// be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HOMELOCK_TEST_HOLD"); dir != "" {
		l, err := homelock.Acquire(dir, "127.0.0.1:3999")
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Hour)
		l.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSecondAcquireIsRefusedWithTheHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := homelock.Acquire(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()

	_, err = homelock.Acquire(dir, "127.0.0.1:3001")
	held, ok := errors.AsType[*homelock.HeldError](err)
	if !ok {
		t.Fatalf("second Acquire = %v, want a *HeldError", err)
	}
	// Port 0 is not an address anyone can reach: none is named until the
	// server knows its port.
	if held.Holder.PID != os.Getpid() || held.Holder.Addr != "" {
		t.Errorf("holder = %+v, want pid %d and no address yet", held.Holder, os.Getpid())
	}
	if !strings.Contains(err.Error(), "another AdaptBot server") || !strings.Contains(err.Error(), "ADAPTBOT_HOME") {
		t.Errorf("message %q does not say what holds the folder and what to do", err)
	}

	if err := l.SetAddr("127.0.0.1:41234"); err != nil {
		t.Fatal(err)
	}
	_, err = homelock.Acquire(dir, "")
	if err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:41234") {
		t.Errorf("after SetAddr, second Acquire = %v, want the holder's address", err)
	}
	h, ok, err := homelock.Read(dir)
	if err != nil || !ok || h.Addr != "127.0.0.1:41234" {
		t.Errorf("Read = %+v, %v, %v; want the holder", h, ok, err)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := homelock.Read(dir); ok {
		t.Error("Read after Release says the folder is held")
	}
	l2, err := homelock.Acquire(dir, "127.0.0.1:3001")
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

func TestOtherFoldersAreIndependent(t *testing.T) {
	a, err := homelock.Acquire(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := homelock.Acquire(t.TempDir(), "")
	if err != nil {
		t.Fatalf("a second folder: %v", err)
	}
	b.Release()
}

// TestKillReleases holds the lock in a child process, kills it with SIGKILL
// (no chance to clean up) and takes the lock: the kernel dropped it.
func TestKillReleases(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HOMELOCK_TEST_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("child said %q", line)
	}

	_, err = homelock.Acquire(dir, "")
	held, ok := errors.AsType[*homelock.HeldError](err)
	if !ok || held.Holder.PID != cmd.Process.Pid || held.Holder.Addr != "127.0.0.1:3999" {
		t.Fatalf("while the child holds it: %v (holder %+v), want the child, pid %d at 127.0.0.1:3999", err, held, cmd.Process.Pid)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // the child is gone, with its descriptors
	l, err := homelock.Acquire(dir, "")
	if err != nil {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
	l.Release()
}

// TestAcquireAsNamesTheCommand: a folder held by a command other than the
// server says which, to whoever is refused it.
func TestAcquireAsNamesTheCommand(t *testing.T) {
	dir := t.TempDir()
	l, err := homelock.AcquireAs(dir, "", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	h, held, err := homelock.Read(dir)
	if err != nil || !held || h.Command != "mcp" || h.Addr != "" {
		t.Fatalf("Read = %+v, %v, %v", h, held, err)
	}
	_, err = homelock.Acquire(dir, "127.0.0.1:3000")
	var he *homelock.HeldError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "adaptbot mcp (pid") {
		t.Errorf("a server beside adaptbot mcp: %v; want it refused, naming adaptbot mcp", err)
	}
}
