package benchmarks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRowsArePrivateAndRedacted: benchmarks.csv is the owner's alone (a
// file an older release left 0644 is tightened), and a key in a query or
// an error is not kept in clear.
func TestRowsArePrivateAndRedacted(t *testing.T) {
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "new.csv"), filepath.Join(dir, "old.csv")
	if err := os.WriteFile(old, []byte(strings.Join(header, ",")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "AKIAIOSFODNN7EXAMPLE"
	for _, p := range []string{fresh, old} {
		l, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Log(Row{Timestamp: time.Now(), Query: "my aws key " + key, Error: "denied for " + key, Intent: "CHAT"}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		info, _ := os.Stat(p)
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", p, info.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
			t.Errorf("%s holds the key in clear: %s", p, b)
		}
	}
}
