package registry

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

const typedSource = `// Package stats counts words.
package stats

import "context"

// Input is the text.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text\"`" + `
}

// Output is the count.
type Output struct {
	Words int ` + "`json:\"words\"`" + `
}

// Execute counts.
func Execute(ctx context.Context, in Input) (Output, error) { return Output{Words: 1}, nil }
`

func TestEntryDescribesOutputAndReach(t *testing.T) {
	f := newFixture(t)
	f.write(t, "stats", typedSource)
	f.write(t, "fetch", strings.Replace(toolSource("fetch", "fetches a page."), `import "context"`, `import (
	"context"

	"adaptbot/toolkit"
)`, 1)+"\nfunc page(ctx context.Context) (string, error) { return toolkit.Get(ctx, \"https://example.com\") }\n")
	r := f.open(t, nil)
	e, _ := r.Entry("stats")
	if want := `{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"],"additionalProperties":false}`; string(e.Output) != want {
		t.Errorf("stats output = %s, want %s", e.Output, want)
	}
	if e.Network {
		t.Error("stats: Network = true for a tool without toolkit")
	}
	if e, _ := r.Entry("fetch"); !e.Network || e.Output != nil {
		t.Errorf("fetch: Network %v, Output %s; want true and none", e.Network, e.Output)
	}
}

// TestOpenDescribesOldEntries opens a registry saved before entries carried
// output schemas: the serving source tells them, without a new version.
func TestOpenDescribesOldEntries(t *testing.T) {
	f := newFixture(t)
	f.write(t, "stats", typedSource)
	r := f.open(t, nil)
	before, _ := r.Entry("stats")

	// Take the output schema out of the saved file, as an older AdaptBot wrote it.
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	delete(file.Tools[0], "output")
	data, _ = json.Marshal(file)
	if err := os.WriteFile(f.path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	r, err = Open(context.Background(), Options{ToolsDir: f.tools, Path: f.path})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := r.Entry("stats")
	if after.Version != before.Version || !reflect.DeepEqual(after.Output, before.Output) {
		t.Errorf("after reopening: version %d, output %s; want version %d, output %s", after.Version, after.Output, before.Version, before.Output)
	}
	saved, err := ReadEntries(f.path)
	if err != nil || len(saved) != 1 || saved[0].Output == nil {
		t.Errorf("saved entries %+v (%v): want the output schema written back", saved, err)
	}
}
