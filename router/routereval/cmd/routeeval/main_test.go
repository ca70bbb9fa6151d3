package main

import (
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/router/routereval"
)

var miniDir = filepath.Join("..", "..", "..", "testdata", "mini")

// TestEval: the evaluation on the toy dataset, as JSON and as tables.
func TestEval(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"--latency=false", "--format", "json", miniDir}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var r routereval.Report
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if r.Tools != 10 || r.Tasks != 3 || len(r.Systems) != 5 {
		t.Errorf("report: %+v", r)
	}
	out.Reset()
	if err := run(t.Context(), []string{"--latency=false", miniDir}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "| router fused (Route) |") {
		t.Errorf("text report: %v\n%s", err, out.String())
	}
}

// TestEvalErrors: a bad command line says why (exit status 2); a missing
// dataset names its folder.
func TestEvalErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{}, true, "want one DIR"},
		{[]string{dir, "q"}, true, "want one DIR"},
		{[]string{"--format", "xml", dir}, true, "--format must be text or json"},
		{[]string{"--nope", dir}, true, "-nope"},
		{[]string{filepath.Join(dir, "nowhere")}, false, "nowhere"},
	} {
		var stderr strings.Builder
		err := run(t.Context(), tt.args, io.Discard, &stderr)
		if err == nil || errors.Is(err, errUsage) != tt.usage {
			t.Errorf("%q: err %v, want usage error %v", tt.args, err, tt.usage)
			continue
		}
		if msg := stderr.String() + err.Error(); !strings.Contains(msg, tt.want) {
			t.Errorf("%q: %q does not say %q", tt.args, msg, tt.want)
		}
	}
}
