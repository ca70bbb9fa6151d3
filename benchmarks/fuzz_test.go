package benchmarks

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are files as they are met: the current header, an older
// release's, the seed format, torn and hostile ones.
func fuzzSeeds() []string {
	cur := strings.Join(header, ",") + "\n"
	older := strings.Join(header[:slices.Index(header, colUser)+1], ",") + "\n"
	beforeTier := strings.Join(header[:slices.Index(header, colScore)+1], ",") + "\n"
	return []string{
		cur + "2025-11-02T09:00:00Z,hello,CHAT,calculator,,True,True,0.8,,r1,1,2,3,0,0,0,,calculator,http,bob,,,,native\n",
		older + "2025-11-02T09:00:00Z,hello,CHAT,general,,N/A,N/A,0.8,,r1,1,2,3,0,0,0,,,http,bob\n",
		beforeTier + "2025-11-02T09:00:00Z,hello,CHAT,general,,N/A,N/A,0.8,,r1,1,2,3,0,0,0,,,http,bob,,,\n",
		"timestamp,query,intent,category,generation_time,param_extraction,tool_execution,latency,error_message\n" +
			"2025-11-02 09:01:00.5,\"weather in Paris, FR\",CHAT,weather,None,True,True,2.5,\n",
		cur + "2025-11-02T09:00:00Z,\"torn",
		cur + "x,a\"b",
		"\ufeff" + cur,
		"",
		"\"",
	}
}

// FuzzRead reads any file as the dashboard and the report do: rows or an
// error, never a panic.
func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, _ := Read(bytes.NewReader(data))
		if n := bytes.Count(data, []byte("\n")) + 1; len(rows) > n {
			t.Fatalf("%d rows from %d lines", len(rows), n)
		}
	})
}

// FuzzOpen opens any file found at the log's path (current, older, torn,
// foreign: the header upgrade and the torn-line repair), then logs a row:
// the row must be there to read afterwards, whatever the file held.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "benchmarks.csv")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Open(path)
		if err != nil {
			return // an older file whose rows cannot be carried over says so
		}
		want := Row{Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Query: "the row logged after opening", RequestID: "fuzz-1", Intent: "CHAT"}
		if err := l.Log(want); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		rows, _ := ReadFile(path)
		if len(rows) == 0 || rows[len(rows)-1].RequestID != want.RequestID || rows[len(rows)-1].Query != want.Query {
			got, _ := os.ReadFile(path)
			t.Fatalf("the row logged after opening is not the last read back; file now:\n%q", got)
		}
	})
}
