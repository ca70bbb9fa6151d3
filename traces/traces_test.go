package traces

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAddGetAndReopen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b", "requests.jsonl")
	s, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := json.RawMessage(`{"response":"hi","trace":[{"node":"intent","ms":1.5}],"total_ms":3}`)
	if err := s.Add(Record{ID: "a1", Kind: Chat, Query: "hello", Result: res}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Record{ID: "b2", Kind: Run, Tool: "calculator", Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get("a1")
	if err != nil || r.Kind != Chat || r.Query != "hello" || string(r.Result) != string(res) || r.Time.IsZero() {
		t.Fatalf("Get(a1) = %+v, %v", r, err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nope) err = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart finds both again, from the file.
	s, err = Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err = s.Get("b2")
	if err != nil || r.Tool != "calculator" || r.Error != "boom" {
		t.Fatalf("after reopen Get(b2) = %+v, %v", r, err)
	}
	if got := s.Recent(5); len(got) != 2 || got[0].ID != "b2" || got[1].ID != "a1" {
		t.Errorf("Recent = %+v", got)
	}
}

func TestRefusesBadRecords(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "r.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(Record{Kind: Chat}); err == nil {
		t.Error("a record without an ID was stored")
	}
	if err := s.Add(Record{ID: "x", Result: json.RawMessage(`{broken`)}); err == nil {
		t.Error("a record with invalid JSON was stored")
	}
}

// TestRotationKeepsOneOldFile writes far more than MaxBytes: the disk holds
// at most the current file and one old one, the newest records are all
// found, and the oldest are gone.
func TestRotationKeepsOneOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "requests.jsonl")
	s, err := Open(p, Options{MaxBytes: 4 << 10, Keep: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pad := strings.Repeat("x", 200)
	for i := range 200 {
		if err := s.Add(Record{ID: fmt.Sprint("id", i), Kind: Chat, Query: pad}); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 {
		t.Fatalf("files = %v, want the current one and one old one", files)
	}
	for _, f := range files {
		if info, _ := os.Stat(f); info.Size() > 4<<10 {
			t.Errorf("%s is %d bytes, over MaxBytes", f, info.Size())
		}
	}
	// id199 is in memory; id185 only on disk (Keep is 10); id0 is gone.
	for _, id := range []string{"id199", "id185"} {
		if _, err := s.Get(id); err != nil {
			t.Errorf("Get(%s) = %v", id, err)
		}
	}
	if _, err := s.Get("id0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(id0) = %v, want it rotated away", err)
	}
	if got := s.Recent(100); len(got) != 10 || got[0].ID != "id199" || got[9].ID != "id190" {
		t.Errorf("Recent kept %d, first %v", len(got), got[0].ID)
	}
}

// TestCutLineIsSkipped: a crash in the middle of a write leaves half a line;
// the store opens and the whole records around it are still found.
func TestCutLineIsSkipped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "requests.jsonl")
	os.WriteFile(p, []byte(`{"request_id":"ok1","kind":"chat"}`+"\n"+`{"request_id":"cut","ki`+"\n"), 0o644)
	s, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(Record{ID: "ok2", Kind: Build}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ok1", "ok2"} {
		if _, err := s.Get(id); err != nil {
			t.Errorf("Get(%s) = %v", id, err)
		}
	}
}

func TestConcurrentAdds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "requests.jsonl")
	s, err := Open(p, Options{MaxBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := s.Add(Record{ID: fmt.Sprintf("g%d-%d", g, i), Kind: Run}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	s.Close()
	s, err = Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := len(s.Recent(1000)); got != 400 {
		t.Errorf("records after reopen = %d, want 400", got)
	}
}

// TestRatingIsStoredWithTheRecord: storing a record again with a rating
// replaces it, in memory and after a restart.
func TestRatingIsStoredWithTheRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), "requests.jsonl")
	s, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Record{ID: "0123456789abcdef", Kind: Chat, Query: "2+2", Result: json.RawMessage(`{"response":"5"}`)}
	if err := s.Add(r); err != nil {
		t.Fatal(err)
	}
	r.Rating = &Rating{Score: -1, Comment: "2+2 is 4", RequestID: "fedcba9876543210"}
	if err := s.Add(r); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(r.ID); got.Rating == nil || got.Rating.Score != -1 || len(s.Recent(10)) != 1 {
		t.Fatalf("after rating: %+v, %d recent", got, len(s.Recent(10)))
	}
	s.Close()
	s, err = Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, _ := s.Get(r.ID); got.Rating == nil || got.Rating.Comment != "2+2 is 4" || string(got.Result) != `{"response":"5"}` {
		t.Errorf("after a restart: %+v", got)
	}
}
