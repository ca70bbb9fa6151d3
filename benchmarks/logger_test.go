package benchmarks_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
)

func open(t testing.TB, path string) *benchmarks.Logger {
	t.Helper()
	l, err := benchmarks.Open(path)
	if err != nil {
		t.Fatalf("Open(%q) error = %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func logRow(t testing.TB, l *benchmarks.Logger, r benchmarks.Row) {
	t.Helper()
	if err := l.Log(r); err != nil {
		t.Fatalf("Log() error = %v", err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRead(t testing.TB, path string) []benchmarks.Row {
	t.Helper()
	rows, err := benchmarks.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%q) error = %v", path, err)
	}
	return rows
}

var headerLine = strings.Join(benchmarks.Header(), ",") + "\n"

var ts = time.Date(2026, 1, 30, 10, 15, 0, 123_000_000, time.UTC)

func TestHeader(t *testing.T) {
	want := "timestamp,query,intent,category,tool_generation_time_sec," +
		"parameter_extraction_success,tool_execution_success,end_to_end_latency_sec,error_message," +
		"request_id,llm_calls,prompt_tokens,completion_tokens,build_attempts,discovery_requests,tools_loaded,node_times,tools,door,user,error_kind,rated_request,score,tier\n"
	if headerLine != want {
		t.Errorf("header = %q, want %q", headerLine, want)
	}
}

func TestOpenWritesHeaderOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "benchmarks.csv")
	for i := range 2 {
		l := open(t, path)
		logRow(t, l, benchmarks.Row{Timestamp: ts, Query: fmt.Sprint("q", i)})
		if err := l.Close(); err != nil {
			t.Fatalf("Close() error = %v", err)
		}
		if l.Rotated() != "" {
			t.Errorf("Rotated() = %q on a file with the current header", l.Rotated())
		}
	}
	got := readFile(t, path)
	if n := strings.Count(got, "timestamp,"); n != 1 {
		t.Errorf("header appears %d times in\n%s", n, got)
	}
	if !strings.HasPrefix(got, headerLine) {
		t.Errorf("file does not start with the header:\n%s", got)
	}
	if rows := mustRead(t, path); len(rows) != 2 || rows[0].Query != "q0" || rows[1].Query != "q1" {
		t.Errorf("ReadFile() = %+v, want rows q0 and q1", rows)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm&^0o644 != 0 {
		t.Errorf("file mode = %v, want at most 0644", perm)
	}
}

func TestLogLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	logRow(t, l, benchmarks.Row{
		Timestamp:         time.Date(2026, 1, 30, 11, 15, 0, 123_456_789, time.FixedZone("CET", 3600)),
		Query:             `say "hi", then stop`,
		Intent:            adaptbot.IntentBuild,
		Category:          adaptbot.CategoryBuildCreate,
		GenerationTime:    12345678 * time.Microsecond,
		ParamExtraction:   benchmarks.True,
		ToolExecution:     benchmarks.False,
		Latency:           1500 * time.Millisecond,
		Error:             "check failed",
		RequestID:         "req-1",
		LLMCalls:          3,
		PromptTokens:      1200,
		CompletionTokens:  340,
		BuildAttempts:     2,
		DiscoveryRequests: 1,
		ToolsLoaded:       7,
		NodeTimes: []benchmarks.NodeTime{
			{Node: "decide", Duration: 12 * time.Millisecond},
			{Node: "create", Duration: 300 * time.Millisecond},
			{Node: "odd=name;x", Duration: 1500 * time.Microsecond},
		},
	})
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "hello", Intent: adaptbot.IntentChat, Category: adaptbot.CategoryGeneral, Latency: 250 * time.Millisecond, Tools: []string{"weather", "unit_converter"}, Tier: benchmarks.TierNative})
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "wrong city", Intent: adaptbot.IntentFeedback, Category: "weather", Tools: []string{"weather"}, RequestID: "req-3", RatedRequest: "req-2", Score: -1})

	want := headerLine +
		`2026-01-30T10:15:00.123Z,"say ""hi"", then stop",BUILD,build_create,12.345678,True,False,1.500000,check failed,req-1,3,1200,340,2,1,7,decide=0.012;create=0.300;odd_name_x=0.002,,,,,,,` + "\n" +
		`2026-01-30T10:15:00.123Z,hello,CHAT,general,,N/A,N/A,0.250000,,,0,0,0,0,0,0,,weather;unit_converter,,,,,,native` + "\n" +
		`2026-01-30T10:15:00.123Z,wrong city,FEEDBACK,weather,,N/A,N/A,0.000000,,req-3,0,0,0,0,0,0,,weather,,,,req-2,-1,` + "\n"
	if got := readFile(t, path); got != want {
		t.Errorf("file =\n%s\nwant\n%s", got, want)
	}
}

func TestLogRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		row  benchmarks.Row
		want *benchmarks.Row // nil: same as row
	}{
		{"plain", benchmarks.Row{Query: "what's the weather", Intent: "CHAT", Category: "weather", ToolExecution: benchmarks.True, Latency: time.Second}, nil},
		{"comma", benchmarks.Row{Query: "a, b, c", Error: "bad, very bad"}, nil},
		{"quotes", benchmarks.Row{Query: `he said "no"`, Error: `"quoted"`}, nil},
		{"newlines", benchmarks.Row{Query: "line one\nline two\nline three", Error: "multi\nline"}, nil},
		// encoding/csv reads a quoted \r\n as \n.
		{"crlf", benchmarks.Row{Query: "one\r\ntwo"}, &benchmarks.Row{Query: "one\ntwo"}},
		{"unicode", benchmarks.Row{Query: "grüß dich ☀ 天気"}, nil},
		{"leading space", benchmarks.Row{Query: "  padded  "}, nil},
		{"tools", benchmarks.Row{Category: "weather", Tools: []string{"weather", "unit_converter", "weather"}}, nil},
		{"tier", benchmarks.Row{Category: "weather", Tools: []string{"weather", "unit_converter"}, Tier: benchmarks.TierMixed}, nil},
		{"control characters", benchmarks.Row{Query: "red \x1b[31mtext\x00", Error: "bell\a"}, &benchmarks.Row{Query: `red \x1b[31mtext\x00`, Error: `bell\x07`}},
		{"node times", benchmarks.Row{NodeTimes: []benchmarks.NodeTime{{Node: "a", Duration: time.Millisecond}, {Node: "a", Duration: 2 * time.Second}}}, nil},
	}
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	for _, tt := range tests {
		tt.row.Timestamp = ts
		logRow(t, l, tt.row)
	}
	rows := mustRead(t, path)
	if len(rows) != len(tests) {
		t.Fatalf("ReadFile() returned %d rows, want %d", len(rows), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.row
			if tt.want != nil {
				want = *tt.want
			}
			want.Timestamp = ts
			if got := rows[i]; !reflect.DeepEqual(got, want) {
				t.Errorf("row read back =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestLogFillsTimestamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	before := time.Now().Truncate(time.Millisecond)
	logRow(t, l, benchmarks.Row{Query: "now"})
	after := time.Now()
	got := mustRead(t, path)[0].Timestamp
	if got.Before(before) || got.After(after) || got.Location() != time.UTC {
		t.Errorf("Timestamp = %v, want UTC between %v and %v", got, before, after)
	}
}

func TestLogAfterClose(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "b.csv"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Log(benchmarks.Row{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Log() after Close error = %v, want os.ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() error = %v, want nil", err)
	}
}

func TestLogConcurrent(t *testing.T) {
	const writers, each = 50, 20
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Quotes and newlines make a torn row easy to detect.
				err := l.Log(benchmarks.Row{
					Query:     fmt.Sprintf("writer %d, row %d: \"%s\"\nend", w, i, strings.Repeat("x", 100*(i%5))),
					RequestID: fmt.Sprintf("%d-%d", w, i),
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows := mustRead(t, path)
	if len(rows) != writers*each {
		t.Fatalf("ReadFile() returned %d rows, want %d", len(rows), writers*each)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		var w, i int
		if _, err := fmt.Sscanf(r.RequestID, "%d-%d", &w, &i); err != nil {
			t.Fatalf("request_id %q: %v", r.RequestID, err)
		}
		want := fmt.Sprintf("writer %d, row %d: \"%s\"\nend", w, i, strings.Repeat("x", 100*(i%5)))
		if r.Query != want || seen[r.RequestID] {
			t.Errorf("row %s: query %q (seen before: %v), want %q", r.RequestID, r.Query, seen[r.RequestID], want)
		}
		seen[r.RequestID] = true
	}
}

func TestOpenRepairsTornLine(t *testing.T) {
	good := headerLine + "2026-01-30T10:15:00.123Z,first,CHAT,general,,N/A,N/A,0.100000,,r1,1,2,3,0,0,4,,,,,,,,\n"
	tests := []struct {
		name string
		torn string
	}{
		{"unquoted", "2026-01-30T10:15:01.000Z,sec"},
		{"inside quotes", `2026-01-30T10:15:01.000Z,"half, a quo`},
		{"inside quotes after newline", "2026-01-30T10:15:01.000Z,\"line one\nline"},
		{"after escaped quote", `2026-01-30T10:15:01.000Z,"say ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.csv")
			if err := os.WriteFile(path, []byte(good+tt.torn), 0o644); err != nil {
				t.Fatal(err)
			}
			l := open(t, path)
			logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "after", RequestID: "r2"})
			logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "later", RequestID: "r3"})

			if got := readFile(t, path); !strings.HasPrefix(got, good+tt.torn) {
				t.Errorf("repair changed existing bytes:\n%s", got)
			}
			rows, err := benchmarks.ReadFile(path)
			var bad *benchmarks.BadLinesError
			if !errors.As(err, &bad) {
				t.Fatalf("ReadFile() error = %v, want a *BadLinesError for the torn line", err)
			}
			if len(bad.Lines) != 1 || bad.Lines[0].Line != 3 {
				t.Errorf("bad lines = %v, want only line 3", bad.Lines)
			}
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.RequestID)
			}
			if want := []string{"r1", "r2", "r3"}; !reflect.DeepEqual(ids, want) {
				t.Errorf("rows read = %q, want %q", ids, want)
			}
		})
	}
}

const oldHeader = "timestamp,query,intent,category,tool_generation_time_sec,parameter_extraction_success,tool_execution_success,end_to_end_latency_sec,error_message\n"

const oldFile = oldHeader +
	"2025-11-02T09:00:00.000000,hello there,CHAT,general,,N/A,N/A,0.812345,\n" +
	"2025-11-02 09:01:00.5,\"weather in Paris, FR\",CHAT,weather,None,True,True,2.5,\n" +
	"2025-11-02T09:02:00Z,make a tool,BUILD,build_create,14.2,N/A,False,15.1,\"SyntaxError: line 3\nunexpected }\"\n"

func TestOpenRotatesOldHeader(t *testing.T) {
	tests := []struct {
		name    string
		content string
	}{
		{"nine columns", oldFile},
		{"columns reordered", strings.Replace(headerLine, "query,intent", "intent,query", 1)},
		{"torn header", headerLine[:20]},
		{"not csv at all", "\x00\x01binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "benchmarks.csv")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			l := open(t, path)
			logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "new"})

			backup := l.Rotated()
			if dir, name := filepath.Split(backup); dir != filepath.Dir(path)+string(filepath.Separator) ||
				!strings.HasPrefix(name, "benchmarks.csv.") || !strings.HasSuffix(name, ".bak") {
				t.Fatalf("Rotated() = %q, want benchmarks.csv.<time>.bak beside the file", backup)
			}
			if got := readFile(t, backup); got != tt.content {
				t.Errorf("backup = %q, want the old file unchanged %q", got, tt.content)
			}
			if got, want := readFile(t, path), headerLine; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 2 {
				t.Errorf("new file =\n%s\nwant the header and one row", got)
			}
		})
	}
}

func TestOpenRotateAvoidsClobbering(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.csv")
	seen := map[string]bool{}
	for i := range 3 {
		if err := os.WriteFile(path, []byte(oldHeader+fmt.Sprintf("t,q%d,CHAT,general,,N/A,N/A,1,\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		l := open(t, path)
		l.Close()
		if seen[l.Rotated()] {
			t.Fatalf("Rotated() = %q twice", l.Rotated())
		}
		seen[l.Rotated()] = true
	}
	for backup := range seen {
		if !strings.HasPrefix(readFile(t, backup), oldHeader) {
			t.Errorf("backup %s lost its content", backup)
		}
	}
}

// A file of the previous release (18 columns, up to tools) keeps its rows:
// they are carried over under the current header with the new columns
// empty, and the original stays as the backup.
func TestOpenUpgradesOurOlderHeader(t *testing.T) {
	cols := benchmarks.Header()
	older := strings.Join(cols[:18], ",") + "\n"
	rows := "2026-11-02T09:00:00.000Z,\"two, lines\nof query\",CHAT,calculator,,True,True,0.500000,,0123456789abcdef,2,100,10,0,0,5,classifier=0.010,calculator\n" +
		"2026-11-02T09:01:00.000Z,x,RUN,calculator,,N/A,False,0.100000,boom,fedcba9876543210,0,0,0,0,0,0,,calculator\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmarks.csv")
	if err := os.WriteFile(path, []byte(older+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	l := open(t, path)
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "new", Door: adaptbot.DoorMCP, User: "u1", ErrorKind: "failed"})
	if !l.Upgraded() {
		t.Fatalf("Upgraded() = false for an older header of ours (Rotated %q)", l.Rotated())
	}
	if got := readFile(t, l.Rotated()); got != older+rows {
		t.Errorf("backup = %q, want the old file unchanged", got)
	}
	got, err := benchmarks.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("read %d rows, want the 2 carried over and the new one", len(got))
	}
	if got[0].Query != "two, lines\nof query" || got[0].RequestID != "0123456789abcdef" || len(got[0].Tools) != 1 || got[0].Door != "" {
		t.Errorf("first row = %+v, want it as it was, door empty", got[0])
	}
	if got[1].Error != "boom" || got[1].ToolExecution != benchmarks.False {
		t.Errorf("second row = %+v", got[1])
	}
	if got[2].Door != adaptbot.DoorMCP || got[2].User != "u1" || got[2].ErrorKind != "failed" {
		t.Errorf("new row = %+v, want door, user and error kind", got[2])
	}
	if !strings.HasPrefix(readFile(t, path), headerLine) {
		t.Errorf("the upgraded file does not start with the current header")
	}
}

// A file of the release before the tier column (23 columns, up to score)
// keeps every row: they read back with the tier empty, and a new row has
// its tier.
func TestOpenUpgradesToTheTierColumn(t *testing.T) {
	cols := benchmarks.Header()
	older := strings.Join(cols[:len(cols)-1], ",") + "\n"
	rows := "2026-11-02T09:00:00.000Z,17 * 23 + 4,CHAT,calculator,,True,True,0.500000,,r1,1,100,10,0,0,5,direct=0.001,calculator,http,u1,,,\n" +
		"2026-11-02T09:01:00.000Z,wrong,FEEDBACK,calculator,,N/A,N/A,0.000000,,r2,0,0,0,0,0,0,,calculator,http,u1,,r1,-1\n"
	path := filepath.Join(t.TempDir(), "benchmarks.csv")
	if err := os.WriteFile(path, []byte(older+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	l := open(t, path)
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "new", Intent: adaptbot.IntentRun, Tools: []string{"calculator"}, Tier: benchmarks.TierNative})
	if !l.Upgraded() {
		t.Fatalf("Upgraded() = false for the header before the tier column (Rotated %q)", l.Rotated())
	}
	if got := readFile(t, l.Rotated()); got != older+rows {
		t.Errorf("backup = %q, want the old file unchanged", got)
	}
	got := mustRead(t, path)
	if len(got) != 3 {
		t.Fatalf("read %d rows, want the 2 carried over and the new one", len(got))
	}
	if got[0].RequestID != "r1" || got[0].User != "u1" || got[0].Tier != "" || got[1].Score != -1 || got[1].RatedRequest != "r1" || got[1].Tier != "" {
		t.Errorf("rows carried over = %+v, want them as they were, tier empty", got[:2])
	}
	if got[2].Tier != benchmarks.TierNative {
		t.Errorf("new row's tier = %q, want native", got[2].Tier)
	}
}

func TestTierOf(t *testing.T) {
	for _, c := range []struct {
		tiers []string
		want  string
	}{
		{nil, ""},
		{[]string{"interpreted"}, benchmarks.TierInterpreted},
		{[]string{"native"}, benchmarks.TierNative},
		{[]string{"native", "interpreted"}, benchmarks.TierMixed},
	} {
		if got := benchmarks.TierOf(c.tiers); got != c.want {
			t.Errorf("TierOf(%q) = %q, want %q", c.tiers, got, c.want)
		}
	}
}

// committer is a Committer that records what it was given, failing when
// told to.
type committer struct {
	mu   sync.Mutex
	rows []benchmarks.Row
	fail error
}

func (c *committer) Commit(r benchmarks.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, r)
	return c.fail
}

// TestLogWaitsForTheCommitter checks that Log hands each row, as the file
// holds it (redacted), to the committer before it returns, and says when
// the committer could not keep it.
func TestLogWaitsForTheCommitter(t *testing.T) {
	l, err := benchmarks.Open(filepath.Join(t.TempDir(), "b.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := &committer{}
	l.SetCommitter(c)
	if err := l.Log(benchmarks.Row{RequestID: "r1", Query: "key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}); err != nil {
		t.Fatal(err)
	}
	if len(c.rows) != 1 || c.rows[0].RequestID != "r1" || strings.Contains(c.rows[0].Query, "abcdefghijklmnop") {
		t.Fatalf("committed %v, want the one row, redacted", c.rows)
	}
	c.fail = errors.New("the spool is full")
	if err := l.Log(benchmarks.Row{RequestID: "r2"}); err == nil || !strings.Contains(err.Error(), "the spool is full") || !strings.Contains(err.Error(), "r2") {
		t.Errorf("Log with a failing committer = %v, want its error naming the row", err)
	}
}
