package benchmarks_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"adaptbot/benchmarks"
)

func TestReadFileOldFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.csv")
	if err := os.WriteFile(path, []byte("\ufeff"+oldFile), 0o644); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, path)
	want := []benchmarks.Row{
		{
			Timestamp: time.Date(2025, 11, 2, 9, 0, 0, 0, time.UTC),
			Query:     "hello there", Intent: "CHAT", Category: "general",
			Latency: 812345 * time.Microsecond,
		},
		{
			Timestamp: time.Date(2025, 11, 2, 9, 1, 0, 500_000_000, time.UTC),
			Query:     "weather in Paris, FR", Intent: "CHAT", Category: "weather",
			ParamExtraction: benchmarks.True, ToolExecution: benchmarks.True,
			Latency: 2500 * time.Millisecond,
		},
		{
			Timestamp: time.Date(2025, 11, 2, 9, 2, 0, 0, time.UTC),
			Query:     "make a tool", Intent: "BUILD", Category: "build_create",
			GenerationTime: 14200 * time.Millisecond, ToolExecution: benchmarks.False,
			Latency: 15100 * time.Millisecond, Error: "SyntaxError: line 3\nunexpected }",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFile() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadBadLines(t *testing.T) {
	in := "intent,latency_unknown_column,end_to_end_latency_sec,parameter_extraction_success,llm_calls\n" +
		"CHAT,x,1.5,True,2\n" + // line 2: good
		"CHAT,x,1.5\n" + // line 3: too few fields
		"CHAT,x,slow,True,2\n" + // line 4: bad seconds
		"CHAT,x,1,maybe,2\n" + // line 5: bad tri
		"CHAT,x,1,False,two\n" + // line 6: bad count
		"CHAT,x\"y,1,False,1\n" + // line 7: bare quote
		"\n" + // blank lines are skipped, not bad
		"RUN,x,0.25,N/A,0\n" // line 9: good
	rows, err := benchmarks.Read(strings.NewReader(in))
	bad, ok := errors.AsType[*benchmarks.BadLinesError](err)
	if !ok {
		t.Fatalf("Read() error = %v, want *BadLinesError", err)
	}
	var lines []int
	for _, le := range bad.Lines {
		lines = append(lines, le.Line)
	}
	if want := []int{3, 4, 5, 6, 7}; !reflect.DeepEqual(lines, want) {
		t.Errorf("bad lines = %v (%v), want %v", lines, err, want)
	}
	for _, want := range []string{"5 bad line(s)", "line 3: 3 fields, want 5", `line 4: column end_to_end_latency_sec: "slow" is not a number of seconds`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	wantRows := []benchmarks.Row{
		{Intent: "CHAT", Latency: 1500 * time.Millisecond, ParamExtraction: benchmarks.True, LLMCalls: 2},
		{Intent: "RUN", Latency: 250 * time.Millisecond},
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("rows = %+v, want %+v", rows, wantRows)
	}
}

func TestReadFatal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"not a header", "a,b,c\n1,2,3\n", "none of the expected columns"},
		{"broken header", "timestamp,\"query\n", "header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := benchmarks.Read(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) || rows != nil {
				t.Errorf("Read() = %v, %v; want nil rows and an error containing %q", rows, err, tt.want)
			}
			if _, ok := errors.AsType[*benchmarks.BadLinesError](err); ok {
				t.Errorf("Read() error is a *BadLinesError; want a fatal error")
			}
		})
	}
	if _, err := benchmarks.ReadFile(filepath.Join(t.TempDir(), "missing.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v, want os.ErrNotExist", err)
	}
	if rows, err := benchmarks.Read(strings.NewReader("")); rows != nil || err != nil {
		t.Errorf("Read(empty) = %v, %v; want nil, nil", rows, err)
	}
}

func TestParseTri(t *testing.T) {
	tests := []struct {
		in      string
		want    benchmarks.Tri
		wantErr bool
	}{
		{"True", benchmarks.True, false},
		{"true", benchmarks.True, false},
		{"1", benchmarks.True, false},
		{"False", benchmarks.False, false},
		{" no ", benchmarks.False, false},
		{"N/A", benchmarks.NA, false},
		{"", benchmarks.NA, false},
		{"None", benchmarks.NA, false},
		{"maybe", benchmarks.NA, true},
	}
	for _, tt := range tests {
		got, err := benchmarks.ParseTri(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseTri(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, tri := range []benchmarks.Tri{benchmarks.NA, benchmarks.True, benchmarks.False} {
		if got, err := benchmarks.ParseTri(tri.String()); got != tri || err != nil {
			t.Errorf("ParseTri(%q) = %v, %v; want %v", tri.String(), got, err, tri)
		}
	}
	if got, want := benchmarks.TriOf(true), benchmarks.True; got != want {
		t.Errorf("TriOf(true) = %v, want %v", got, want)
	}
	if got, want := benchmarks.TriOf(false), benchmarks.False; got != want {
		t.Errorf("TriOf(false) = %v, want %v", got, want)
	}
}
