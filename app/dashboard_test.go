package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/llm/llmtest"
)

// seedBenchmarks writes rows a server has logged over the last two hours:
// chats on three paths, direct runs of calculator that failed (CLI typos),
// and a build.
func seedBenchmarks(t *testing.T, dir string) {
	t.Helper()
	l, err := benchmarks.Open(filepath.Join(dir, "benchmarks", "benchmarks.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.Now().UTC()
	log := func(r benchmarks.Row) {
		if err := l.Log(r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		at := now.Add(-time.Duration(120-5*i) * time.Minute)
		log(benchmarks.Row{Timestamp: at, Query: fmt.Sprintf("what is %d+%d", i, i), Intent: adaptbot.IntentChat, Category: "calculator",
			Tools: []string{"calculator"}, ParamExtraction: benchmarks.True, ToolExecution: benchmarks.True,
			Latency: time.Duration(800+10*i) * time.Millisecond, RequestID: fmt.Sprintf("chat-%02d", i), LLMCalls: 2, PromptTokens: 900, CompletionTokens: 50,
			NodeTimes: []benchmarks.NodeTime{{Node: "classify", Duration: 300 * time.Millisecond}, {Node: "tools", Duration: 400 * time.Millisecond}}})
		log(benchmarks.Row{Timestamp: at.Add(time.Second), Query: "hello <script>alert(1)</script>", Intent: adaptbot.IntentChat, Category: adaptbot.CategoryGeneral,
			Latency: 400 * time.Millisecond, RequestID: fmt.Sprintf("general-%02d", i), LLMCalls: 1, PromptTokens: 300, CompletionTokens: 40})
	}
	for i := range 5 {
		log(benchmarks.Row{Timestamp: now.Add(-time.Duration(30+i) * time.Minute), Query: `{"expression": "2+"}`, Intent: adaptbot.IntentRun, Category: "calculator",
			ToolExecution: benchmarks.False, Latency: 3 * time.Millisecond, Error: "syntax error", RequestID: fmt.Sprintf("run-%d", i)})
	}
	log(benchmarks.Row{Timestamp: now.Add(-10 * time.Minute), Query: "make a tool that flips coins", Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildCreate,
		GenerationTime: 20 * time.Second, BuildAttempts: 2, Latency: 21 * time.Second, RequestID: "build-1", LLMCalls: 3})
	log(benchmarks.Row{Timestamp: now.Add(-5 * time.Minute), Query: "weather and convert", Intent: adaptbot.IntentChat, Category: "weather_forecast",
		Tools: []string{"weather_forecast", "unit_converter"}, ToolExecution: benchmarks.True, Latency: 2 * time.Second, RequestID: "multi-1", LLMCalls: 3})
}

func summary(t *testing.T, in *instance, query string) map[string]any {
	t.Helper()
	code, body := in.do(t, "GET", "/api/benchmarks"+query, "")
	if code != 200 {
		t.Fatalf("GET /api/benchmarks%s = %d %v", query, code, body)
	}
	return body
}

func TestBenchmarksAPIFilters(t *testing.T) {
	in := start(t, nil, func(dir string) { seedBenchmarks(t, dir) })

	tests := []struct {
		query    string
		requests float64
		check    func(t *testing.T, s map[string]any)
	}{
		{"", 47, func(t *testing.T, s map[string]any) {
			// Latency is over chats only: the 3 ms direct runs and the 21 s build do not count.
			if s["scope"] != "CHAT" || s["scope_requests"] != float64(41) {
				t.Errorf("scope = %v %v", s["scope"], s["scope_requests"])
			}
			// calculator: 21 chats that all worked, 5 direct runs that all failed, apart.
			for _, tool := range s["tools"].([]any) {
				tm := tool.(map[string]any)
				if tm["tool"] == "calculator" {
					if str(tm["chat"]) != `{"failed":0,"ok":20,"rate":1,"requests":20}` || str(tm["run"]) != `{"failed":5,"ok":0,"rate":0,"requests":5}` {
						t.Errorf("calculator = %v", tm)
					}
				}
			}
			for _, p := range s["paths"].([]any) {
				if pm := p.(map[string]any); pm["path"] == "calculator" && pm["requests"] != float64(20) {
					t.Errorf("calculator path counts direct runs: %v", pm)
				}
			}
			if s["by_model"] != nil || s["by_model_note"] == "" {
				t.Errorf("by_model = %v, note %q", s["by_model"], s["by_model_note"])
			}
			recent := s["recent"].([]any)
			first := recent[0].(map[string]any)
			if first["request_id"] != "multi-1" || first["trace"] != "/api/requests/multi-1" || str(first["tools"]) != `["weather_forecast","unit_converter"]` {
				t.Errorf("latest request = %v", first)
			}
		}},
		{"?intent=RUN", 5, func(t *testing.T, s map[string]any) {
			if s["scope"] != "RUN" || s["errors"] != float64(5) {
				t.Errorf("scope %v, errors %v", s["scope"], s["errors"])
			}
			// The runs span 4 minutes: the series spans them, not the chats' two hours.
			if n := len(s["series"].([]any)); n < 4 || n > 6 {
				t.Errorf("series of the runs has %d points, want 5 one-minute points", n)
			}
		}},
		{"?intent=chat&tool=unit_converter", 1, nil},
		{"?tool=calculator", 25, nil},
		{"?path=general", 20, nil},
		{"?tool=calculator&intent=CHAT", 20, func(t *testing.T, s map[string]any) {
			if got := str(s["steps"]); got != `[{"mean_sec":0.4,"per_request":1,"runs":20,"share_of_step_time":0.571429,"step":"tools"},{"mean_sec":0.3,"per_request":1,"runs":20,"share_of_step_time":0.428571,"step":"classify"}]` {
				t.Errorf("steps = %s", got)
			}
		}},
		{"?path=build", 1, func(t *testing.T, s map[string]any) {
			b := s["builds"].(map[string]any)
			if b["requests"] != float64(1) || str(b["attempts"]) != `[{"attempts":2,"builds":1}]` {
				t.Errorf("builds = %v", b)
			}
		}},
		{"?outcome=error", 5, nil},
		{"?outcome=ok&intent=CHAT", 41, nil},
		{"?since=20m", 2, nil},
		{"?since=3h&until=88m", 14, nil}, // chats and general at 120..90 minutes ago, in 1-minute buckets
		{"?tool=nothing_ran_this", 0, func(t *testing.T, s map[string]any) {
			lat := s["latency"].(map[string]any)
			if lat["p50_sec"] != nil || lat["p95_sec"] != nil || s["per_request"].(map[string]any)["llm_calls"] != nil {
				t.Errorf("empty selection: latency %v, per request %v; want nulls", lat, s["per_request"])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			s := summary(t, in, tt.query)
			if s["requests"] != tt.requests {
				t.Errorf("requests = %v, want %v", s["requests"], tt.requests)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}

	for _, bad := range []string{"?since=yesterday", "?intent=PLAY", "?outcome=maybe", "?since=1h&until=2h"} {
		if code, body := in.do(t, "GET", "/api/benchmarks"+bad, ""); code != 400 || body["error"] == "" {
			t.Errorf("GET /api/benchmarks%s = %d %v, want 400 with an error", bad, code, body)
		}
	}

	// A request the server logs shows at once: the logger feeds the
	// aggregates, nothing re-reads the file.
	if code, body := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "2+2"}`); code != 200 {
		t.Fatalf("run = %d %v", code, body)
	}
	s := summary(t, in, "?intent=RUN")
	if s["requests"] != float64(6) {
		t.Errorf("after one more run, RUN requests = %v, want 6", s["requests"])
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	seedBenchmarks(t, dir)
	csvPath := filepath.Join(dir, "benchmarks", "benchmarks.csv")
	runCLI := func(t *testing.T, dir string, args ...string) (string, error) {
		t.Helper()
		return runEnv(t, cliEnv(dir, "127.0.0.1:1"), nil, args...)
	}

	out, err := runCLI(t, dir, "report", "--format", "json", "--intent", "RUN", csvPath)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.HasPrefix(out, "{\n  \"requests\": 5,") {
		t.Errorf("json report does not start with requests:\n%.200s", out)
	}
	var sum benchmarks.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Scope != "RUN" {
		t.Errorf("json report: %v, scope %q", err, sum.Scope)
	}

	out, err = runCLI(t, dir, "report", csvPath, "--format", "md", "--since", "3h")
	if err != nil || !strings.Contains(out, "| path | intent | requests |") || !strings.Contains(out, "| general | CHAT | 20 |") {
		t.Errorf("md report = %v\n%s", err, out)
	}

	out, err = runCLI(t, dir, "report", "--format", "text", csvPath)
	if err != nil || !strings.Contains(out, "Intents: BUILD 1, CHAT 41, RUN 5") || !strings.Contains(out, "no tool fit") == strings.Contains(out, "need_tool") {
		t.Errorf("text report = %v\n%s", err, out)
	}

	exported := filepath.Join(dir, "errors.csv")
	if out, err = runCLI(t, dir, "report", "--format", "csv", "--outcome", "error", "--out", exported, csvPath); err != nil {
		t.Fatal(err, out)
	}
	f, err := os.Open(exported)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 6 || strings.Join(recs[0], ",") != strings.Join(benchmarks.Header(), ",") {
		t.Errorf("csv export: %v, %d records, header %v", err, len(recs), recs[0])
	}

	for _, args := range [][]string{{"report", "-h"}, {"report", "--help"}} {
		out, err := runCLI(t, dir, args...)
		if !strings.Contains(out, "--format text|md|json|csv") || (err != nil && !strings.Contains(err.Error(), "help requested")) {
			t.Errorf("%v = %v\n%s", args, err, out)
		}
	}
	for _, args := range [][]string{{"report", "--format", "xml"}, {"report", "--since", "yesterday"}, {"report", "--bogus"}} {
		if _, err := runCLI(t, dir, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestDashboardCountsAChatAsItHappens: a chat that runs a tool shows in
// /api/benchmarks at once, under its path and its tool, with the tools column
// the flow fills, and a direct run of the same tool is counted apart.
func TestDashboardCountsAChatAsItHappens(t *testing.T) {
	script := newScript(map[string]string{"what is 2+2?": "calculator"}, map[string]string{"what is 2+2?": `{"expression": "2+2"}`})
	in := start(t, modelEnv(llmtest.New(t, script.reply)))
	if code, r := in.chat(t, "what is 2+2?"); code != 200 {
		t.Fatalf("chat = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "1/0"}`); code != 422 {
		t.Fatalf("run = %d %v", code, r)
	}
	s := summary(t, in, "?tool=calculator")
	if s["requests"] != float64(2) {
		t.Fatalf("calculator requests = %v, want 2: %v", s["requests"], s)
	}
	tools := s["tools"].([]any)
	if len(tools) != 1 || str(tools[0].(map[string]any)["chat"]) != `{"failed":0,"ok":1,"rate":1,"requests":1}` ||
		str(tools[0].(map[string]any)["run"]) != `{"failed":1,"ok":0,"rate":0,"requests":1}` {
		t.Errorf("tools = %v", str(tools))
	}
	recent := s["recent"].([]any)
	chat := recent[1].(map[string]any)
	if chat["intent"] != "CHAT" || str(chat["tools"]) != `["calculator"]` || chat["path"] != "calculator" {
		t.Errorf("the chat's row = %v", chat)
	}
	if rows := in.rows(t); len(rows) != 2 || rows[0]["tools"] != "calculator" {
		t.Errorf("CSV rows = %v", rows)
	}
	// The /tools page counts from the same aggregates: 2 uses, 1 failed.
	_, page := in.raw(t, "GET", "/tools", "")
	row := regexp.MustCompile(`(?s)<tr[^>]*>\s*<td[^>]*>\s*<a[^>]*>calculator</a>.*?</tr>`).Find(page)
	if !strings.Contains(string(row), `data-label="uses">2<`) || !strings.Contains(string(row), `data-label="errors">50%<`) {
		t.Errorf("/tools row of calculator = %s", row)
	}
}
