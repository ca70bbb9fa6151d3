package registry

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"adaptbot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fullEntry is an entry with every field set.
func fullEntry() Entry {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return Entry{Tool: adaptbot.Tool{Name: "t", Description: "d", Category: "c", Parameters: json.RawMessage(`{"type":"object"}`),
		Output: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), Network: true, Calls: []string{"u"},
		Version: 3, Origin: adaptbot.OriginGenerated, NoDirect: true},
		Source: "tools/t/t.go", SHA256: "h", TimeoutMS: 5, Status: Pending, LastError: "l", PendingVersion: 4, PendingSHA256: "p",
		CreatedAt: at, UpdatedAt: at, Warning: "w", Uses: []string{"u"}, UsedBy: []string{"b"}}
}

// TestRegistryFileShape: an entry is written to tools_registry.json in
// the same shape, key for key and in the same order, as the registry files
// people already have (testdata/entry.json), and a file of that shape reads
// back into an entry that is written the same again. The API's tool bodies
// are entries too, so this shape is theirs as well.
func TestRegistryFileShape(t *testing.T) {
	got, err := json.MarshalIndent(file{Tools: []Entry{fullEntry()}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "entry.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the registry file's shape changed:\n got %s\nwant %s", got, want)
	}
	var back file
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(back, "", "  ")
	if !bytes.Equal(again, want) {
		t.Errorf("read back and written again:\n got %s\nwant %s", again, want)
	}
}

// TestEntrySpec: an entry's description (the adaptbot.Tool it embeds) is
// the serving version's, its category the description's, whatever the
// state of the file on disk.
func TestEntrySpec(t *testing.T) {
	want := adaptbot.Tool{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`),
		Output: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), Category: "c", Origin: adaptbot.OriginGenerated,
		Version: 3, Network: true, Calls: []string{"u"}, NoDirect: true}
	if got := fullEntry().Tool; !reflect.DeepEqual(got, want) {
		t.Errorf("Tool = %+v, want %+v", got, want)
	}
	if fullEntry().Remote() {
		t.Error("a registry tool's spec says it is remote")
	}
}
