package failures

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCasesAreStoredPrivateAndRedacted: a failure case holds a person's
// arguments and comment, so its file is the owner's alone (0600), and a
// key pasted into either is not kept in clear.
func TestCasesAreStoredPrivateAndRedacted(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 0)
	const key = "adaptbot_c2VjcmV0LWtleS1wYXN0ZWQtaW4tYS1jaGF0"
	id, _ := s.Record(Call{Tool: "calc", Version: 1, Args: json.RawMessage(`{"expression":"` + key + `"}`), Kind: Error,
		Message: "bad token " + key, Comment: "here is my key " + key})
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Case("calc", id)
	if c.Exact || !json.Valid(c.Args) {
		t.Errorf("redacted arguments %s still exact (%v) or not JSON", c.Args, c.Exact)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(matches) == 0 {
		t.Fatal("no case file written")
	}
	for _, p := range matches {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", p, info.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
			t.Errorf("%s holds the key in clear: %s", p, b)
		}
	}
}
