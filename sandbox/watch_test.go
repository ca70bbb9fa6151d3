package sandbox_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// watchedPool starts a pool of workers confined by Landlock that watches
// paths in place of the files of their rules (skipped without Landlock,
// failed under ADAPTBOT_REQUIRE_LANDLOCK=1), and waits until it is full.
func watchedPool(t *testing.T, opts sandbox.Options, paths ...string) (*sandbox.Pool, sandbox.Stats) {
	t.Helper()
	landlockABI(t)
	opts.Landlock = sandbox.LandlockRequire
	p := newPool(t, sandbox.WatchFiles(opts, paths...))
	if watching, _, _, _ := sandbox.WatchState(p); !watching {
		t.Fatal("the workers are confined, but the pool does not watch their files")
	}
	return p, waitFull(t, p)
}

// writeFile writes a file for a test, failing it on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceFile replaces path as NetworkManager replaces /etc/resolv.conf:
// a new file, written elsewhere, renamed over it.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), filepath.Base(path)+".new")
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitRenewed waits until the pool is full again, none of the workers of
// old is left, and the file watch has made at least rounds rounds of
// replacements.
func waitRenewed(t *testing.T, p *sandbox.Pool, old []int, rounds uint64) sandbox.Stats {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.Stats()
		_, _, _, done := sandbox.WatchState(p)
		stale := slices.ContainsFunc(s.PIDs, func(pid int) bool { return slices.Contains(old, pid) })
		if done >= rounds && !stale && s.Live == s.Size && s.Busy == 0 && s.Starting == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers not replaced: %d rounds, want %d; %+v, old workers %v", done, rounds, s, old)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantRenewedOnce checks that exactly one round replaced every worker, and
// that the replacements serve calls.
func wantRenewedOnce(t *testing.T, p *sandbox.Pool, before, after sandbox.Stats) {
	t.Helper()
	if _, _, _, rounds := sandbox.WatchState(p); rounds != 1 {
		t.Errorf("%d rounds of replacements, want 1", rounds)
	}
	if got := after.Restarts - before.Restarts; got != int64(before.Size) {
		t.Errorf("%d workers replaced, want %d", got, before.Size)
	}
	for _, pid := range before.PIDs {
		if !processGone(pid) {
			t.Errorf("worker %d outlived its replacement", pid)
		}
	}
	res, err := run(t, p, "calculator", calculator, `{"a":1,"b":2}`)
	if err != nil || res.Output != `{"sum":3}` {
		t.Errorf("a call after the replacement: %q, %v", res.Output, err)
	}
}

// A confined worker's Landlock rule holds the file, not the name: when a
// watched file is renamed over, every worker is replaced.
func TestPoolReplacesWorkersWhenWatchedFileReplaced(t *testing.T) {
	dir := t.TempDir()
	resolv, hosts := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "hosts")
	writeFile(t, resolv, "nameserver 192.0.2.1\n")
	writeFile(t, hosts, "127.0.0.1 localhost\n")
	p, before := watchedPool(t, testOptions(t), resolv, hosts)
	// Warm workers: the tools they have compiled go with them.
	if _, err := run(t, p, "calculator", calculator, `{"a":1}`); err != nil {
		t.Fatal(err)
	}

	replaceFile(t, resolv, "nameserver 192.0.2.2\n")
	after := waitRenewed(t, p, before.PIDs, 1)
	wantRenewedOnce(t, p, before, after)
}

// A worker busy when a watched file changes finishes its call, and is
// replaced after it; the idle one is replaced at once.
func TestPoolReplacesBusyWorkerAfterItsCall(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		<-release
		fmt.Fprint(w, "released")
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a failed test still ends the call
		}
	}()

	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	writeFile(t, resolv, "nameserver 192.0.2.1\n")
	opts := testOptions(t)
	opts.CallTimeout = 20 * time.Second
	opts.Toolkit.Policy = toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	p, before := watchedPool(t, opts, resolv)

	type outcome struct {
		out string
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		url := fmt.Sprintf("http://127.0.0.1:%d/", srv.Listener.Addr().(*net.TCPAddr).Port)
		res, err := run(t, p, "fetcher", fetcher, fmt.Sprintf(`{"url":%q}`, url))
		done <- outcome{res.Output, err}
	}()
	<-arrived // one worker is busy, and stays so until release

	replaceFile(t, resolv, "nameserver 192.0.2.2\n")
	busy := waitIdleReplaced(t, p, before.PIDs)
	if processGone(busy) {
		t.Fatalf("busy worker %d was ended during its call", busy)
	}
	close(release)
	if o := <-done; o.err != nil || o.out != "released" {
		t.Fatalf("the call in flight at the change: %q, %v", o.out, o.err)
	}
	after := waitRenewed(t, p, before.PIDs, 1)
	wantRenewedOnce(t, p, before, after)
}

// waitIdleReplaced waits, while one worker of old is busy, until the others
// have been replaced and the pool is otherwise full, and returns the busy
// one.
func waitIdleReplaced(t *testing.T, p *sandbox.Pool, old []int) int {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second) // within the toolkit's 10 s per request
	for {
		s := p.Stats()
		_, _, _, rounds := sandbox.WatchState(p)
		var left []int
		for _, pid := range s.PIDs {
			if slices.Contains(old, pid) {
				left = append(left, pid)
			}
		}
		if rounds == 1 && len(left) == 1 && s.Live == s.Size && s.Busy == 1 && s.Starting == 0 {
			return left[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle workers not replaced while one is busy: %d rounds; %+v, old workers %v", rounds, s, old)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A change to another file in a watched folder replaces no worker: after
// one, then a change to a watched file, there has been one round exactly.
func TestPoolIgnoresUnrelatedFileChange(t *testing.T) {
	dir := t.TempDir()
	resolv, neighbour := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "resolv.conf.bak")
	writeFile(t, resolv, "nameserver 192.0.2.1\n")
	writeFile(t, neighbour, "nameserver 192.0.2.9\n")
	p, before := watchedPool(t, testOptions(t), resolv)

	// One event (the removal), and the watch has read it: had it counted,
	// a round would be due now.
	if err := os.Remove(neighbour); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, events, pending, rounds := sandbox.WatchState(p)
		if events >= 1 && !pending {
			if rounds != 0 {
				t.Fatalf("%d rounds of replacements after an unrelated change", rounds)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never read the unrelated change: %d events, pending %v", events, pending)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := p.Stats(); !slices.Equal(slices.Sorted(slices.Values(s.PIDs)), slices.Sorted(slices.Values(before.PIDs))) || s.Restarts != before.Restarts {
		t.Errorf("workers replaced after an unrelated change: %+v, before %+v", s, before)
	}

	replaceFile(t, resolv, "nameserver 192.0.2.2\n")
	after := waitRenewed(t, p, before.PIDs, 1)
	wantRenewedOnce(t, p, before, after)
}

// Unconfined workers open files by name and see a replaced file: the pool
// does not watch for them.
func TestPoolDoesNotWatchForUnconfinedWorkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	writeFile(t, path, "nameserver 192.0.2.1\n")
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.Landlock = sandbox.LandlockOff
	p := newPool(t, sandbox.WatchFiles(opts, path))
	if watching, _, _, _ := sandbox.WatchState(p); watching {
		t.Error("the pool watches files for unconfined workers")
	}
}

// Close stops the file watch: no goroutine of the pool outlives it.
func TestPoolWatchStopsOnClose(t *testing.T) {
	landlockABI(t)
	path := filepath.Join(t.TempDir(), "resolv.conf")
	writeFile(t, path, "nameserver 192.0.2.1\n")
	before := goroutines()
	opts := testOptions(t)
	opts.Landlock = sandbox.LandlockRequire
	p, err := sandbox.NewPool(sandbox.WatchFiles(opts, path))
	if err != nil {
		t.Fatal(err)
	}
	if watching, _, _, _ := sandbox.WatchState(p); !watching {
		t.Fatal("the pool does not watch")
	}
	replaceFile(t, path, "nameserver 192.0.2.2\n") // a round due, or running, at Close
	p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before the pool", goroutines(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
