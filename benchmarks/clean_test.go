package benchmarks_test

import (
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"adaptbot"
	"adaptbot/benchmarks"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "what's the weather", "what's the weather"},
		{"tab and newline stay", "a\tb\nc", "a\tb\nc"},
		{"crlf becomes lf", "a\r\nb", "a\nb"},
		{"lone cr", "a\rb", `a\x0db`},
		{"escape sequence", "\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`},
		{"nul", "a\x00b", `a\x00b`},
		{"del", "a\x7fb", `a\x7fb`},
		{"c1 csi", "a\u009b31mb", `a\u009b31mb`},
		{"invalid utf-8", "caf\xe9", `caf\xe9`},
		{"unicode stays", "grüß dich ☀ 天気", "grüß dich ☀ 天気"},
		{"backslash stays", `C:\x1b`, `C:\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := benchmarks.Clean(tt.in); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789…[cut, 13 bytes]"},
		{"ääääää", 3, "äää…[cut, 12 bytes]"}, // 12 bytes but 6 characters: cut by characters
		{"ääää", 4, "ääää"},
		// Already cut: written again, it keeps the original length.
		{"0123456789…[cut, 13 bytes]", 10, "0123456789…[cut, 13 bytes]"},
		{"0123456789abc…[cut, 13 bytes]", 10, "0123456789…[cut, 31 bytes]"},
	}
	for _, tt := range tests {
		if got := benchmarks.Cut(tt.in, tt.max); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestLogLongAndHostileText writes what a hostile or careless user could send
// and checks that the file stays valid UTF-8 without control characters, one
// field per column, so DuckDB, pandas and spreadsheets read it.
func TestLogLongAndHostileText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	long := strings.Repeat("é", 50_000)
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: long, Error: "\x1b[31m" + long, RequestID: "id\x00"})
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: "\xff\xfe bytes", Tools: []string{"a;b", "c\x1b"}})

	raw := readFile(t, path)
	if !utf8.ValidString(raw) {
		t.Error("file is not valid UTF-8")
	}
	for i, c := range []byte(raw) {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			t.Fatalf("control byte %#x at offset %d", c, i)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	rows := mustRead(t, path)
	wantQuery := strings.Repeat("é", benchmarks.MaxText) + "…[cut, 100000 bytes]"
	if rows[0].Query != wantQuery {
		t.Errorf("long query kept %d characters, ends %q", utf8.RuneCountInString(rows[0].Query), rows[0].Query[len(rows[0].Query)-30:])
	}
	if !strings.HasPrefix(rows[0].Error, `\x1b[31m`) || !strings.HasSuffix(rows[0].Error, "…[cut, 100008 bytes]") {
		t.Errorf("long error = %.40q…", rows[0].Error)
	}
	if rows[0].RequestID != `id\x00` {
		t.Errorf("request_id = %q", rows[0].RequestID)
	}
	if got, want := strings.Join(rows[1].Tools, "|"), `a_b|c\x1b`; got != want {
		t.Errorf("tools = %q, want %q", got, want)
	}
	if rows[1].Query != `\xff\xfe bytes` {
		t.Errorf("query = %q", rows[1].Query)
	}
}

// TestExportKeepsCutMarkers: a long query exported again keeps its marker
// with the original length.
func TestExportKeepsCutMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	logRow(t, l, benchmarks.Row{Timestamp: ts, Query: strings.Repeat("x", 5000), Intent: adaptbot.IntentChat})
	var out strings.Builder
	if n, err := benchmarks.Export(path, benchmarks.Filter{}, &out); err != nil || n != 1 {
		t.Fatalf("Export = %d, %v", n, err)
	}
	rows, err := benchmarks.Read(strings.NewReader(out.String()))
	if err != nil || len(rows) != 1 {
		t.Fatalf("Read = %d rows, %v", len(rows), err)
	}
	if want := strings.Repeat("x", benchmarks.MaxText) + "…[cut, 5000 bytes]"; rows[0].Query != want {
		t.Errorf("exported query ends %q", rows[0].Query[len(rows[0].Query)-30:])
	}
}
