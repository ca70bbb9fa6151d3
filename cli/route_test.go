package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/config"
	"adaptbot/router"
)

var miniDir = filepath.Join("..", "router", "testdata", "mini")

// route runs `adaptbot route args...` with stdin and returns stdout.
func route(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	cfg, _ := config.Load(func(string) string { return "" })
	cfg.Registry = filepath.Join(t.TempDir(), "none.json")
	err := routeCommand(t.Context(), Env{Config: cfg, Stdin: strings.NewReader(stdin), Stdout: &out}, args)
	return out.String(), err
}

func TestRouteJSONLines(t *testing.T) {
	in := `{"id": "a", "query": "weather forecast for Rome"}

{"id": 7, "query": "save the presentation"}
{"id": "none", "query": "zzzz"}
`
	out, err := route(t, in, "--catalog", filepath.Join(miniDir, "catalog.json"), "--top-k", "2")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		ID    json.RawMessage `json:"id"`
		Tools []router.Hit    `json:"tools"`
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
	wantIDs := []string{`"a"`, `7`, `"none"`}
	wantFirst := []string{"get_forecast", "save-presentation", ""}
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(got), out)
	}
	for i, l := range got {
		first := ""
		if len(l.Tools) > 0 {
			first = l.Tools[0].Name
		}
		if string(l.ID) != wantIDs[i] || first != wantFirst[i] || len(l.Tools) > 2 {
			t.Errorf("line %d: id %s, first %q, %d tools; want %s, %q", i, l.ID, first, len(l.Tools), wantIDs[i], wantFirst[i])
		}
	}
}

func TestRouteErrors(t *testing.T) {
	dir := t.TempDir()
	badJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(badJSON, []byte(`{"not": "an array"}`), 0o644)
	catalog := filepath.Join(miniDir, "catalog.json")
	tests := []struct {
		name      string
		stdin     string
		args      []string
		code      int    // exit status
		errSubstr string // in the error's message
	}{
		{"unknown flag", "", []string{"--nope"}, 2, "unknown flag --nope"},
		{"bad top-k", "", []string{"--top-k", "0", "q"}, 2, "--top-k must be positive"},
		{"top-k not a number", "", []string{"--top-k", "five", "q"}, 2, `--top-k: "five" is not a valid value`},
		{"bad format", "", []string{"--format", "xml", "q"}, 2, "--format must be text or json"},
		{"bad mode", "", []string{"--mode", "best", "q"}, 2, "unknown mode"},
		{"eval is gone", "", []string{"--eval", dir}, 2, "unknown flag --eval"},
		{"missing catalog", "", []string{"--catalog", filepath.Join(dir, "missing.json"), "q"}, 1, "missing.json"},
		{"catalog not an array", "", []string{"--catalog", badJSON, "q"}, 1, "bad.json"},
		{"stdin not JSON", "{\"id\":1,\"query\":\"ok\"}\nnot json\n", []string{"--catalog", catalog}, 1, "line 2"},
		{"stdin without query", `{"id": 1}`, []string{"--catalog", catalog}, 1, `no "query"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := route(t, tt.stdin, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if code := ExitCode(err, io.Discard); code != tt.code {
				t.Errorf("exit status %d, want %d (%v)", code, tt.code, err)
			}
			if !strings.Contains(err.Error(), tt.errSubstr) {
				t.Errorf("error %q does not mention %q", err, tt.errSubstr)
			}
		})
	}
}
