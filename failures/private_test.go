package failures

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot"
)

// TestCasesAreStoredPrivateAndRedacted: a failure case holds a person's
// arguments and comment, so its file is the owner's alone (0600), and a
// key pasted into either is not kept in clear.
func TestCasesAreStoredPrivateAndRedacted(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 0)
	const key = "adaptbot_c2VjcmV0LWtleS1wYXN0ZWQtaW4tYS1jaGF0"
	id, _ := s.Record(Call{Tool: "calc", Version: 1, Args: json.RawMessage(`{"expression":"` + key + `"}`), Kind: adaptbot.FailError,
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

// TestCasesKeepTheirAuthors: a case says whose words it holds (who sent
// its arguments, who wrote its comment, whose request it names) across
// sightings, flushes and reloads, so that the service can show the words
// to them alone.
func TestCasesKeepTheirAuthors(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 0)
	args := json.RawMessage(`{"expression":"1/0"}`)
	id, _ := s.Record(Call{Tool: "calc", Version: 1, Args: args, Kind: adaptbot.FailError, Message: "division by zero", RequestID: "r1", Author: "p-ana"})
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Record(Call{Tool: "calc", Version: 1, Args: args, Kind: adaptbot.FailError, Message: "division by zero", RequestID: "r2", Author: "p-bo"})
	s.Record(Call{Tool: "calc", Version: 1, Args: args, Kind: adaptbot.FailFeedback, Message: "wrong", Comment: "nope", RequestID: "r2", Author: "p-bo", CommentBy: "p-root"})
	s.Record(Call{Tool: "calc", Version: 1, Args: args, Kind: adaptbot.FailError, Message: "division by zero", RequestID: "r3", Author: "p-ana"})
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = load(t, &Files{Dir: dir}, 0)
	c, ok := s.Case("calc", id)
	if !ok {
		t.Fatal("case lost")
	}
	if got, want := strings.Join(c.Authors, ","), "p-bo,p-ana"; got != want {
		t.Errorf("authors %q, want %q (each once, latest last)", got, want)
	}
	if c.Comment != "nope" || c.CommentBy != "p-root" {
		t.Errorf("comment %q by %q, want \"nope\" by p-root", c.Comment, c.CommentBy)
	}
	if c.RequestID != "r3" || c.RequestBy != "p-ana" {
		t.Errorf("request %q by %q, want r3 by p-ana", c.RequestID, c.RequestBy)
	}
	if c.Count != 4 || c.Withheld {
		t.Errorf("count %d withheld %v, want 4 and false", c.Count, c.Withheld)
	}
}

// TestCasesKeepAtMostMaxAuthors: a case sent by many people names the
// latest MaxAuthors of them, so that a case stays small.
func TestCasesKeepAtMostMaxAuthors(t *testing.T) {
	s := load(t, &Files{Dir: t.TempDir()}, 0)
	var id string
	for i := range MaxAuthors + 3 {
		id, _ = s.Record(Call{Tool: "calc", Version: 1, Args: json.RawMessage(`{"x":1}`), Kind: adaptbot.FailPanic, Message: "boom", Author: fmt.Sprintf("p-%d", i)})
	}
	c, _ := s.Case("calc", id)
	if len(c.Authors) != MaxAuthors || c.Authors[0] != "p-3" || c.Authors[MaxAuthors-1] != fmt.Sprintf("p-%d", MaxAuthors+2) {
		t.Errorf("authors %v, want the latest %d", c.Authors, MaxAuthors)
	}
}

// TestCasesWithoutAuthorsStillLoad: the files of a release before authors
// load whole; their cases name nobody, so their words are for admins.
func TestCasesWithoutAuthorsStillLoad(t *testing.T) {
	dir := t.TempDir()
	old := `{"tool":"calc","cases":[{"id":"0123456789abcdef","tool":"calc","version":2,"arguments":{"expression":"2/0"},"arguments_bytes":20,"exact":true,"kind":"error","message":"division by zero","comment":"hm","count":3,"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:06Z","request_id":"00000000000000aa","status":"open"}]}`
	if err := os.WriteFile(filepath.Join(dir, "calc.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s := load(t, &Files{Dir: dir}, 0)
	c, ok := s.Case("calc", "0123456789abcdef")
	if !ok || string(c.Args) != `{"expression":"2/0"}` || c.Comment != "hm" || c.Count != 3 || c.RequestID != "00000000000000aa" {
		t.Fatalf("old case %+v (found %v), want it whole", c, ok)
	}
	if len(c.Authors) != 0 || c.CommentBy != "" || c.RequestBy != "" {
		t.Errorf("old case names %v/%q/%q, want nobody", c.Authors, c.CommentBy, c.RequestBy)
	}
}

// TestExpectIsKeptWithTheCase: what a repair's version answered for a case
// kept out of the examples stays with the case, across flushes and
// reloads; an expectation holding a secret is not kept.
func TestExpectIsKeptWithTheCase(t *testing.T) {
	dir := t.TempDir()
	s := load(t, &Files{Dir: dir}, 0)
	a, _ := s.Record(Call{Tool: "calc", Version: 1, Args: json.RawMessage(`{"expression":"2+"}`), Kind: adaptbot.FailPanic, Message: "boom", Author: "p-ana"})
	b, _ := s.Record(Call{Tool: "calc", Version: 1, Args: json.RawMessage(`{"expression":"3+"}`), Kind: adaptbot.FailPanic, Message: "boom", Author: "p-ana"})
	if err := s.Expect("calc", a, "2+ = 2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Expect("calc", b, "token adaptbot_c2VjcmV0LWtleS1wYXN0ZWQtaW4tYS1jaGF0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Expect("calc", "nope", "x"); err != ErrNoCase {
		t.Errorf("Expect of an unknown case = %v", err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := load(t, &Files{Dir: dir}, 0)
	if c, _ := again.Case("calc", a); c.Expect != "2+ = 2" {
		t.Errorf("case a after a reload: expect %q", c.Expect)
	}
	if c, _ := again.Case("calc", b); c.Expect != "" {
		t.Errorf("case b keeps an expectation with a secret: %q", c.Expect)
	}
}
