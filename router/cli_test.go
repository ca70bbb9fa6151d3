package router

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var miniCatalog = filepath.Join("testdata", "mini", "catalog.json")

// runCLI runs RunCLI with args and stdin, returning stdout, stderr and the error.
func runCLI(t *testing.T, stdin string, local func() []Doc, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := RunCLI(context.Background(), args, strings.NewReader(stdin), &out, &errOut, local)
	return out.String(), errOut.String(), err
}

func TestCLIJSONLines(t *testing.T) {
	in := `{"id": "a", "query": "weather forecast for Rome"}

{"id": 7, "query": "save the presentation"}
{"id": "none", "query": "zzzz"}
`
	out, _, err := runCLI(t, in, nil, "--catalog", miniCatalog, "--top-k", "2")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		ID    json.RawMessage `json:"id"`
		Tools []Hit           `json:"tools"`
	}
	var got []line
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(got), out)
	}
	wantIDs := []string{`"a"`, `7`, `"none"`}
	wantFirst := []string{"get_forecast", "save-presentation", ""}
	for i, l := range got {
		if string(l.ID) != wantIDs[i] {
			t.Errorf("line %d: id %s, want %s", i, l.ID, wantIDs[i])
		}
		if len(l.Tools) > 2 {
			t.Errorf("line %d: %d tools, want at most 2", i, len(l.Tools))
		}
		if wantFirst[i] == "" {
			if l.Tools == nil || len(l.Tools) != 0 {
				t.Errorf("line %d: tools %v, want []", i, l.Tools)
			}
			continue
		}
		if len(l.Tools) == 0 || l.Tools[0].Name != wantFirst[i] || l.Tools[0].Server == "" || l.Tools[0].Score <= 0 {
			t.Errorf("line %d: tools %v, want %s first with server and score", i, l.Tools, wantFirst[i])
		}
	}
	if !strings.Contains(out, `"tools":[]`) {
		t.Errorf("an unmatched query should give \"tools\":[], got:\n%s", out)
	}
}

func TestCLIQueryText(t *testing.T) {
	// Flags may come after the query words.
	out, _, err := runCLI(t, "", nil, "--catalog", miniCatalog, "list", "the", "directory", "--top-k", "1")
	if err != nil {
		t.Fatal(err)
	}
	if want := " 1. "; !strings.HasPrefix(out, want) || !strings.Contains(out, "Files / listDirectory") {
		t.Errorf("got %q, want one line ranking Files / listDirectory", out)
	}
	if n := strings.Count(out, "\n"); n != 1 {
		t.Errorf("got %d lines, want 1:\n%s", n, out)
	}
}

func TestCLIQueryJSON(t *testing.T) {
	out, _, err := runCLI(t, "", nil, "--catalog", miniCatalog, "--format", "json", "--mode", "flat", "calculate 2+2")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Query string `json:"query"`
		Tools []Hit  `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if got.Query != "calculate 2+2" || len(got.Tools) == 0 || got.Tools[0].Name != "calculate" {
		t.Errorf("got %+v", got)
	}
}

func TestCLITextLinesFromStdin(t *testing.T) {
	out, _, err := runCLI(t, `{"id":"q1","query":"read a file"}`+"\n", nil, "--catalog", miniCatalog, "--format", "text")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `# "q1" read a file`) || !strings.Contains(out, "read_file") {
		t.Errorf("got %q", out)
	}
}

func TestCLILocalRegistry(t *testing.T) {
	local := func() []Doc {
		return []Doc{{Server: "", Name: "echo", Description: "Repeat the input text back."}}
	}
	out, _, err := runCLI(t, "", local, "repeat", "text")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "general / echo") {
		t.Errorf("got %q, want the local tool in domain general", out)
	}
	// No catalog and no registry: nothing to route, but not an error.
	out, _, err = runCLI(t, "", nil, "anything")
	if err != nil || out != "no tools matched\n" {
		t.Errorf("got %q, %v", out, err)
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	badJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(badJSON, []byte(`{"not": "an array"}`), 0o644)
	noName := filepath.Join(dir, "noname.json")
	os.WriteFile(noName, []byte(`[{"name": "s", "tools": [{"description": "x"}]}]`), 0o644)

	tests := []struct {
		name      string
		stdin     string
		args      []string
		usage     bool   // want a *UsageError
		errSubstr string // in the error's message
	}{
		{"unknown flag", "", []string{"--nope"}, true, "flag provided but not defined"},
		{"bad top-k", "", []string{"--top-k", "0", "q"}, true, "--top-k must be positive"},
		{"top-k not a number", "", []string{"--top-k", "five", "q"}, true, "invalid value"},
		{"bad format", "", []string{"--format", "xml", "q"}, true, "--format must be text or json"},
		{"bad mode", "", []string{"--mode", "best", "q"}, true, "unknown mode"},
		{"eval with query", "", []string{"--eval", dir, "q"}, true, "--eval takes no QUERY"},
		{"missing catalog", "", []string{"--catalog", filepath.Join(dir, "missing.json"), "q"}, false, "missing.json"},
		{"catalog not an array", "", []string{"--catalog", badJSON, "q"}, false, "bad.json"},
		{"tool without name", "", []string{"--catalog", noName, "q"}, false, "no name"},
		{"stdin not JSON", "{\"id\":1,\"query\":\"ok\"}\nnot json\n", []string{"--catalog", miniCatalog}, false, "line 2"},
		{"stdin without query", `{"id": 1}`, []string{"--catalog", miniCatalog}, false, `no "query"`},
		{"eval dir missing", "", []string{"--eval", filepath.Join(dir, "nowhere")}, false, "nowhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, tt.stdin, nil, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			var ue *UsageError
			if got := errors.As(err, &ue); got != tt.usage {
				t.Errorf("usage error = %v, want %v (%v)", got, tt.usage, err)
			}
			if !strings.Contains(err.Error(), tt.errSubstr) {
				t.Errorf("error %q does not mention %q", err, tt.errSubstr)
			}
		})
	}
}

func TestCLIHelp(t *testing.T) {
	_, errOut, err := runCLI(t, "", nil, "-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("err = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(errOut, "usage: adaptbot route") || !strings.Contains(errOut, "-top-k") {
		t.Errorf("help output:\n%s", errOut)
	}
}

func TestCLIEval(t *testing.T) {
	dir := filepath.Join("testdata", "mini")
	out, _, err := runCLI(t, "", nil, "--eval", dir, "--latency=false", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if r.Tools != 10 || r.Tasks != 3 || r.Steps != 6 || len(r.Systems) != 6 || len(r.Latency) != 0 {
		t.Errorf("report: %d tools, %d tasks, %d steps, %d systems, %d latency rows", r.Tools, r.Tasks, r.Steps, len(r.Systems), len(r.Latency))
	}
	// "What is 17 times 23?" shares no word with "calculate", so the whole
	// tasks miss one tool in three; every step names its tool.
	if m := r.Systems[0]; m.StepRecall != 1 || m.RecallAt10 < 0.66 {
		t.Errorf("Route on the toy set: %+v, want all steps found", m)
	}

	out, _, err = runCLI(t, "", nil, "--eval", dir, "--format", "text", "--latency=false")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| router fused (Route) |", "| baseline: hierarchical TF-IDF |", "| baseline: BM25 name+description |", "| router fused + LSA (WithLSA(128)) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

func TestMeasureLatency(t *testing.T) {
	docs := miniDocs(t)
	l := MeasureLatency(ScaleDocs(docs, 100), []string{"weather", "write a file"}, 2)
	if l.Tools != 100 || l.Queries != 2 || l.Reps != 2 || l.P50 <= 0 || l.P99 < l.P50 || l.StableP99 <= 0 {
		t.Errorf("MeasureLatency = %+v", l)
	}
	var out strings.Builder
	(&Report{Latency: []Latency{l}}).WriteText(&out)
	if l.Index != "default" || !strings.Contains(out.String(), "| default | 100 | 2 ×2 |") {
		t.Errorf("latency table:\n%s", out.String())
	}
}

func TestScaleDocs(t *testing.T) {
	docs := miniDocs(t)
	got := ScaleDocs(docs, 25)
	if len(got) != 25 {
		t.Fatalf("len = %d", len(got))
	}
	seen := map[docKey]bool{}
	for _, d := range got {
		k := docKey{d.Server, d.Name}
		if seen[k] {
			t.Errorf("duplicate tool %v", k)
		}
		seen[k] = true
	}
	if got[len(docs)].Server != docs[0].Server+" (replica 1)" || got[len(docs)].Name != docs[0].Name+"_v1" {
		t.Errorf("first replica = %s / %s", got[len(docs)].Server, got[len(docs)].Name)
	}
}
