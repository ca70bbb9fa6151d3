package sandbox

import (
	"bytes"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"adaptbot/contract"
)

// The interpreter's symbols are exactly the contract's allowlist: a package
// missing would fail allowed tools, a package extra would be a hole.
func TestSymbolsAreTheAllowlist(t *testing.T) {
	var got []string
	for key := range baseSymbols {
		if key == "." {
			continue
		}
		if path.Base(key) != path.Base(path.Dir(key)) {
			t.Errorf("key %q: package name is not the path's last element", key)
		}
		got = append(got, path.Dir(key))
	}
	got = append(got, sourcePackages...)
	slices.Sort(got)
	if want := contract.AllowedImports(); !slices.Equal(got, want) {
		t.Errorf("symbol table packages:\n got %v\nwant %v", got, want)
	}
}

func TestToolkitSymbols(t *testing.T) {
	var got []string
	for name := range baseSymbols[toolkitKey] {
		got = append(got, name)
	}
	slices.Sort(got)
	want := []string{"Call", "CallJSON", "Do", "ErrBlocked", "Get", "GetJSON", "PostJSON", "QueryEscape", "Request", "Response"}
	if !slices.Equal(got, want) {
		t.Errorf("toolkit exports %v, want %v: nothing that configures the client or the Sender", got, want)
	}
}

func TestTemplateReadsNoFiles(t *testing.T) {
	for name := range baseSymbols[templateKey] {
		if strings.HasPrefix(name, "Parse") {
			t.Errorf("text/template exports %s", name)
		}
	}
	for _, m := range []string{"ParseFiles", "ParseGlob", "ParseFS"} {
		if _, ok := reflect.TypeOf(&toolTemplate{}).MethodByName(m); ok {
			t.Errorf("the tools' Template has %s", m)
		}
	}
}

func TestCallTimeout(t *testing.T) {
	tests := []struct{ def, tool, call, want time.Duration }{
		{10 * time.Second, 0, 0, 10 * time.Second},
		{10 * time.Second, 2 * time.Second, 0, 2 * time.Second},
		{10 * time.Second, 20 * time.Second, 0, 10 * time.Second}, // a tool may not raise it
		{10 * time.Second, 2 * time.Second, time.Second, time.Second},
		{10 * time.Second, 0, time.Minute, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := callTimeout(tt.def, tt.tool, tt.call); got != tt.want {
			t.Errorf("callTimeout(%v, %v, %v) = %v, want %v", tt.def, tt.tool, tt.call, got, tt.want)
		}
	}
}

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	want := request{ID: 7, Op: opCall, Tool: "echo", Source: []byte("package echo"), Input: []byte(`{"text":"hi"}`), Timeout: time.Second}
	if err := writeFrame(&b, want); err != nil {
		t.Fatal(err)
	}
	raw := slices.Clone(b.Bytes())
	var got request
	if err := readFrame(&b, &got, 1<<20); err != nil {
		t.Fatal(err)
	}
	if got.ID != want.ID || got.Tool != want.Tool || string(got.Source) != string(want.Source) || string(got.Input) != string(want.Input) || got.Timeout != want.Timeout {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if err := readFrame(bytes.NewReader(raw), &got, 10); err == nil || !strings.Contains(err.Error(), "over the 10-byte limit") {
		t.Errorf("an oversized frame: %v", err)
	}
}

func TestClip(t *testing.T) {
	for n, want := range map[int64]string{10: "10 bytes", 1 << 20: "1 MiB", 100 << 20: "100 MiB", 3 << 10: "3 KiB", 1536 << 10: "1.5 MiB"} {
		if got := sizeString(n); got != want {
			t.Errorf("sizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
