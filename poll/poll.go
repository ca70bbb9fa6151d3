// Package poll waits, in tests, for a condition that other goroutines or
// processes will make true: a file the watcher picks up, a row written, a
// replica caught up. It waits for the condition itself, never for a fixed
// time, so a loaded machine makes a test slower, not flaky.
//
// It is for tests only; nothing of the product imports it.
package poll

import (
	"testing"
	"time"
)

// Timeout is how long Until waits before it fails the test: long enough
// for a loaded machine under the race detector, and only ever spent when
// the condition does not come.
const Timeout = 20 * time.Second

// Until calls cond every few milliseconds until it returns true, and fails
// the test, saying it was waiting for what, if Timeout passes first.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", Timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
