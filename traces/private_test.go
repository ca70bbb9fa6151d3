package traces

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTracesArePrivateAndRedacted: the file is the owner's alone (a file
// an older release left 0644 is tightened), and keys pasted into a query,
// a result or a comment are not kept in clear.
func TestTracesArePrivateAndRedacted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
	err = s.Add(Record{ID: "r1", Kind: "chat", Query: "use " + key, Result: json.RawMessage(`{"answer":"` + key + `"}`),
		Rating: &Rating{Score: -1, Comment: "Bearer abcdefghijklmnop", RequestID: "r2"}})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(p)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("requests.jsonl is %v, want 0600", info.Mode().Perm())
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), key) || strings.Contains(string(b), "abcdefghijklmnop\"") {
		t.Errorf("a secret stored in clear: %s", b)
	}
}
