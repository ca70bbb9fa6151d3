package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"adaptbot/benchmarks"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// readCSV reads a CSV with a header into maps, as an analyst's script would.
func readCSV(r io.Reader) ([]map[string]string, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("empty CSV")
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, col := range recs[0] {
			m[col] = rec[i]
		}
		out = append(out, m)
	}
	return out, nil
}

// weatherAPI serves canned Open-Meteo answers on loopback.
func weatherAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/search":
			fmt.Fprint(w, `{"results":[{"name":"Paris","latitude":48.85,"longitude":2.35,"country":"France","admin1":"Île-de-France","timezone":"Europe/Paris"}]}`)
		case "/v1/forecast":
			fmt.Fprint(w, `{"timezone":"Europe/Paris","current_units":{"temperature_2m":"°C","wind_speed_10m":"km/h","relative_humidity_2m":"%","apparent_temperature":"°C"},
			"current":{"time":"2026-11-30T10:00","temperature_2m":7.5,"relative_humidity_2m":80,"apparent_temperature":5.1,"weather_code":3,"wind_speed_10m":12.3},
			"daily_units":{"temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_probability_max":"%"},
			"daily":{"time":["2026-11-30","2026-12-01","2026-12-02"],"weather_code":[3,61,0],"temperature_2m_max":[9.1,8.0,6.2],"temperature_2m_min":[4.0,3.1,1.2],"precipitation_probability_max":[10,80,0]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestChatThroughEveryShippedTool(t *testing.T) {
	weather := weatherAPI(t)
	rewrite := map[string]string{"geocoding-api.open-meteo.com": weather.URL, "api.open-meteo.com": weather.URL}

	script := newScript(map[string]string{
		"what is (2+3)*4?":              "calculator",
		"how many miles is 10 km?":      "unit_converter",
		"what time is it in Tokyo?":     "current_time",
		"count the words in: Hi there.": "text_stats",
		"weather in Paris?":             "weather_forecast",
	}, map[string]string{
		"what is (2+3)*4?":              `{"expression": "(2+3)*4"}`,
		"how many miles is 10 km?":      `{"value": 10, "from": "km", "to": "miles"}`,
		"what time is it in Tokyo?":     `{"timezone": "Asia/Tokyo"}`,
		"count the words in: Hi there.": `{"text": "Hi there."}`,
		"weather in Paris?":             `{"city": "Paris", "days": 3}`,
	})
	llmSrv := llmtest.New(t, script.reply)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_EGRESS_ALLOW"] = "127.0.0.1/32"
	in := startWith(t, env, testHooks(rewrite))

	tests := []struct {
		message, tool, want string
	}{
		{"what is (2+3)*4?", "calculator", "20"},
		{"how many miles is 10 km?", "unit_converter", "6.21"},
		{"what time is it in Tokyo?", "current_time", "Asia/Tokyo"},
		{"count the words in: Hi there.", "text_stats", `"words":2`},
		{"weather in Paris?", "weather_forecast", "Paris"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			code, r := in.chat(t, tt.message)
			if code != 200 {
				t.Fatalf("status %d: %v", code, r)
			}
			if r["path"] != tt.tool || r["intent"] != "CHAT" || r["need_tool"] != false {
				t.Errorf("path, intent, need_tool = %v, %v, %v", r["path"], r["intent"], r["need_tool"])
			}
			if r["parameter_extraction_success"] != true || r["tool_execution_success"] != true {
				t.Errorf("extraction, execution = %v, %v (error %v)", r["parameter_extraction_success"], r["tool_execution_success"], r["error"])
			}
			if resp := str(r["response"]); !strings.Contains(strings.ReplaceAll(resp, " ", ""), strings.ReplaceAll(tt.want, " ", "")) {
				t.Errorf("response %q does not contain %q", resp, tt.want)
			}
			var nodes []string
			for _, s := range r["trace"].([]any) {
				nodes = append(nodes, s.(map[string]any)["node"].(string))
			}
			if got := strings.Join(nodes, ","); got != "classifier,execute,synthesizer" {
				t.Errorf("trace = %s", got)
			}
			if r["request_id"] == "" {
				t.Error("no request_id")
			}
		})
	}

	// The classifier was offered a shortlist, not a dump of the registry,
	// each tool with its own schema, and chose with the arguments in the
	// same call.
	for _, req := range llmSrv.Requests() {
		if !isClassifier(req) {
			continue
		}
		if tools := len(req.Tools) - 3; tools > 5 { // besides build_tool, need_tool and request_tools
			t.Errorf("classifier offered %d tools", tools)
		}
		if !strings.Contains(string(req.Schema("calculator")), `"expression"`) {
			t.Errorf("calculator schema = %s", req.Schema("calculator"))
		}
	}

	rows := in.rows(t)
	if len(rows) != len(tests) {
		t.Fatalf("CSV rows = %d, want %d", len(rows), len(tests))
	}
	for i, row := range rows {
		if row["category"] != tests[i].tool || row["intent"] != "CHAT" || row["parameter_extraction_success"] != "True" || row["tool_execution_success"] != "True" || row["error_message"] != "" {
			t.Errorf("row %d = %v", i, row)
		}
		// One call decides and extracts, one answers.
		if row["llm_calls"] != "2" || row["tools"] != tests[i].tool || row["request_id"] == "" || !strings.Contains(row["node_times"], "execute=") {
			t.Errorf("row %d extras = %v", i, row)
		}
	}
}

func TestChatGeneralNeedToolAndErrors(t *testing.T) {
	script := newScript(map[string]string{
		"translate this into Klingon": "need_tool",
		"what is 1/0?":                "calculator",
		"what is two plus?":           "calculator",
		"how far is 3 parsecs?":       "unit_converter",
	}, map[string]string{
		"what is 1/0?": `{"expression": "1/0"}`,
		// Invalid twice: the tool never runs.
		"what is two plus?": `{"expr": "2+"}` + "\n---\n" + `{"expression": 2}`,
		// Invalid, then fixed after the validation error is sent back.
		"how far is 3 parsecs?": `{"value": "3", "from": "parsec"}` + "\n---\n" + `{"value": 3, "from": "pc", "to": "km"}`,
	})
	llmSrv := llmtest.New(t, script.reply)
	in := start(t, modelEnv(llmSrv))

	code, r := in.chat(t, "hello")
	if code != 200 || r["path"] != "general" || r["response"] != "Hello! I am a scripted model." {
		t.Errorf("general: %d %v", code, r)
	}

	code, r = in.chat(t, "translate this into Klingon")
	if code != 200 || r["path"] != "need_tool" || r["need_tool"] != true || r["original_question"] != "translate this into Klingon" {
		t.Errorf("need_tool: %d %v", code, r)
	}

	code, r = in.chat(t, "what is 1/0?")
	if code != 200 || r["tool_execution_success"] != false || !strings.Contains(str(r["response"]), "did not work") || !strings.Contains(str(r["error"]), "zero") {
		t.Errorf("tool error: %d %v", code, r)
	}

	code, r = in.chat(t, "what is two plus?")
	if code != 200 || r["parameter_extraction_success"] != false || r["tool_execution_success"] != nil || !strings.Contains(str(r["error"]), "expression") {
		t.Errorf("invalid arguments: %d %v", code, r)
	}

	code, r = in.chat(t, "how far is 3 parsecs?")
	if code != 200 || r["parameter_extraction_success"] != true {
		t.Errorf("repaired arguments: %d %v", code, r)
	}
	var retried bool
	for _, req := range llmSrv.Requests() {
		if req.Forced() == "unit_converter" && strings.Contains(req.Last().Text(), "Those arguments are invalid") {
			retried = true
		}
	}
	if !retried {
		t.Error("the validation error was not sent back to the model")
	}

	rows := in.rows(t)
	want := []struct{ category, extraction, execution string }{
		{"general", "N/A", "N/A"},
		{"need_tool", "N/A", "N/A"},
		{"calculator", "True", "False"},
		{"calculator", "False", "N/A"},
		{"unit_converter", "True", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %d, want %d", len(rows), len(want))
	}
	for i, w := range want {
		row := rows[i]
		if row["category"] != w.category || row["parameter_extraction_success"] != w.extraction || (w.execution != "" && row["tool_execution_success"] != w.execution) {
			t.Errorf("row %d = %v, want %+v", i, row, w)
		}
	}
	if rows[2]["error_message"] == "" || rows[3]["error_message"] == "" {
		t.Error("failed requests have no error_message")
	}
}

func TestBadInput(t *testing.T) {
	in := start(t, nil)
	tests := []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/chat", `{"message": `, 400, "not valid JSON"},
		{"POST", "/chat", `{}`, 400, `"message" is required`},
		{"POST", "/chat", ``, 400, "empty"},
		{"POST", "/chat", `{"message":"hi","history":[{"role":"system","content":"x"}]}`, 400, "history[0].role"},
		{"GET", "/api/tools/nope", "", 404, "no tool named"},
		{"GET", "/api/tools/Bad-Name", "", 400, "invalid tool name"},
		{"POST", "/api/tools/nope/run", `{}`, 404, "no tool named"},
		{"POST", "/api/tools/calculator/run", `{"expression": 5}`, 400, "expression"},
		{"POST", "/api/tools/calculator/run", `{"expression": "1+", "x": 1}`, 400, "x"},
	}
	for _, tt := range tests {
		code, r := in.do(t, tt.method, tt.path, tt.body)
		if code != tt.code || !strings.Contains(str(r["error"]), tt.want) {
			t.Errorf("%s %s %.40q = %d %v; want %d and %q", tt.method, tt.path, tt.body, code, r["error"], tt.code, tt.want)
		}
	}

	// An oversized body is refused from its Content-Length, before it is
	// read: announce 2 MiB and read the answer without sending them (a
	// client still writing would see the connection close under it).
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /chat HTTP/1.1\r\nHost: adaptbot\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 2<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(body), "too large") {
		t.Errorf("oversized body = %d %s", resp.StatusCode, body)
	}
}

func TestWithoutModel(t *testing.T) {
	in := start(t, nil)
	if !strings.Contains(in.out.String(), "model: none configured") || !strings.Contains(in.out.String(), "tools: 5 loaded") {
		t.Errorf("startup output:\n%s", in.out)
	}
	code, h := in.do(t, "GET", "/healthz", "")
	m, _ := h["model"].(map[string]any)
	if code != 200 || m == nil || m["provider"] != nil || m["url"] != nil || m["reachable"] != nil ||
		!strings.Contains(str(m["setting"]), "OPENAI_API_KEY") || h["tools"] != float64(5) || h["status"] != "ok" {
		t.Errorf("/healthz = %v", h)
	}
	code, r := in.chat(t, "hello")
	if code != 503 || !strings.Contains(str(r["error"]), "OPENAI_API_KEY") {
		t.Errorf("chat without a model = %d %v", code, r)
	}
	code, page := in.raw(t, "GET", "/", "")
	if code != 200 || !strings.Contains(string(page), "none is configured") || !strings.Contains(string(page), "OPENAI_API_KEY") {
		t.Errorf("page does not say how to configure a model")
	}
	code, r = in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "2^10"}`)
	if code != 200 || !strings.Contains(str(r["output"]), "1024") {
		t.Errorf("direct run = %d %v", code, r)
	}
	code, r = in.do(t, "POST", "/api/tools/build", `{"request": "make a tool"}`)
	if code != 503 || !strings.Contains(str(r["error"]), "OPENAI_API_KEY") {
		t.Errorf("build without a model = %d %v", code, r)
	}
	// Each has its row: the build's refusal too, made before it began.
	rows := in.rows(t)
	if len(rows) != 3 || rows[0]["intent"] != "CHAT" || rows[1]["intent"] != "RUN" || rows[1]["tool_execution_success"] != "True" ||
		rows[2]["intent"] != "BUILD" || rows[2]["error_kind"] != "not_configured" || rows[2]["request_id"] != str(r["request_id"]) {
		t.Errorf("rows = %v", rows)
	}
}

const echoTool = `// Package echo_tool repeats the text it is given.
package echo_tool

import (
	"context"
	"strings"
)

// Input holds the text.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text to repeat\"`" + `
}

// Execute repeats the text.
func Execute(ctx context.Context, in Input) (string, error) { return strings.Repeat(in.Text, %d), nil }
`

func TestToolsDroppedInAndEditedWhileRunning(t *testing.T) {
	in := start(t, nil)
	writeTool(t, in.dir, "echo_tool", fmt.Sprintf(echoTool, 2))
	poll.Until(t, "echo_tool to load", func() bool {
		code, r := in.do(t, "GET", "/api/tools/echo_tool", "")
		return code == 200 && r["serving"] == true
	})
	code, r := in.do(t, "POST", "/api/tools/echo_tool/run", `{"text": "ab"}`)
	if code != 200 || r["output"] != "abab" {
		t.Fatalf("run v1 = %d %v", code, r)
	}
	_, r = in.do(t, "GET", "/api/tools/echo_tool", "")
	if r["origin"] != "manual" || r["version"] != float64(1) || !strings.Contains(str(r["code"]), "package echo_tool") {
		t.Errorf("entry = %v", r)
	}

	writeTool(t, in.dir, "echo_tool", fmt.Sprintf(echoTool, 3))
	poll.Until(t, "version 2", func() bool {
		_, r := in.do(t, "GET", "/api/tools/echo_tool", "")
		return r["version"] == float64(2)
	})
	if _, r := in.do(t, "POST", "/api/tools/echo_tool/run", `{"text": "ab"}`); r["output"] != "ababab" {
		t.Errorf("run v2 = %v", r)
	}

	// A broken edit is reported, and version 2 keeps serving.
	writeTool(t, in.dir, "echo_tool", strings.Replace(fmt.Sprintf(echoTool, 3), "strings.Repeat", "strings.Repeet", 1))
	poll.Until(t, "the broken edit to be reported", func() bool {
		_, r := in.do(t, "GET", "/api/tools/echo_tool", "")
		return r["status"] == "broken"
	})
	_, r = in.do(t, "GET", "/api/tools/echo_tool", "")
	if !strings.Contains(str(r["last_error"]), "Repeet") || r["version"] != float64(2) {
		t.Errorf("broken entry = %v", r)
	}
	if _, r := in.do(t, "POST", "/api/tools/echo_tool/run", `{"text": "ab"}`); r["output"] != "ababab" {
		t.Errorf("run after broken edit = %v", r)
	}

	// A file that breaks the contract is never registered as serving.
	writeTool(t, in.dir, "sneaky", "// Package sneaky runs commands.\npackage sneaky\n\nimport (\n\t\"context\"\n\t\"os/exec\"\n)\n\ntype Input struct{}\n\nfunc Execute(ctx context.Context, in Input) (string, error) {\n\tout, err := exec.Command(\"id\").Output()\n\treturn string(out), err\n}\n")
	poll.Until(t, "sneaky to be rejected", func() bool {
		code, r := in.do(t, "GET", "/api/tools/sneaky", "")
		return code == 200 && r["status"] == "broken"
	})
	if code, r := in.do(t, "POST", "/api/tools/sneaky/run", `{}`); code != 409 {
		t.Errorf("running a rejected tool = %d %v", code, r)
	}

	os.RemoveAll(filepath.Join(in.dir, "tools", "echo_tool"))
	poll.Until(t, "echo_tool to be removed", func() bool {
		code, _ := in.do(t, "GET", "/api/tools/echo_tool", "")
		return code == 404
	})
}

func TestCorruptRegistry(t *testing.T) {
	in := start(t, nil, func(dir string) {
		os.WriteFile(filepath.Join(dir, "tools_registry.json"), []byte(`{"tools": [{"name": "calc`), 0o644)
	})
	_, h := in.do(t, "GET", "/healthz", "")
	if h["tools"] != float64(5) || !strings.Contains(str(h["warnings"]), "corrupt") {
		t.Errorf("/healthz = %v", h)
	}
	if !strings.Contains(in.out.String(), "corrupt") {
		t.Errorf("startup output does not report the corrupt registry:\n%s", in.out)
	}
	kept, _ := filepath.Glob(filepath.Join(in.dir, "tools_registry.json.corrupt-*"))
	if len(kept) != 1 {
		t.Fatalf("corrupt copies = %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); string(b) != `{"tools": [{"name": "calc` {
		t.Errorf("the corrupt file was changed: %q", b)
	}
}

func TestConcurrentRequestsEachWriteOneRow(t *testing.T) {
	script := newScript(map[string]string{}, map[string]string{})
	llmSrv := llmtest.New(t, script.reply)
	in := start(t, modelEnv(llmSrv))
	const n = 50
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(map[string]string{"message": fmt.Sprintf("hello, \"number\" %d,\nwith a comma", i)})
			if code, r := in.do(t, "POST", "/chat", string(b)); code != 200 {
				t.Errorf("request %d: %d %v", i, code, r)
			}
		}()
	}
	wg.Wait()
	rows := in.rows(t)
	if len(rows) != n {
		t.Fatalf("rows = %d, want %d", len(rows), n)
	}
	seen := map[string]bool{}
	for _, row := range rows {
		seen[row["query"]] = true
		if row["category"] != "general" || row["request_id"] == "" {
			t.Errorf("row = %v", row)
		}
	}
	if len(seen) != n {
		t.Errorf("distinct queries = %d, want %d", len(seen), n)
	}
	f, _ := os.Open(in.env["ADAPTBOT_BENCHMARKS"])
	defer f.Close()
	header, _ := csv.NewReader(f).Read()
	if got, want := strings.Join(header[:9], ","), "timestamp,query,intent,category,tool_generation_time_sec,parameter_extraction_success,tool_execution_success,end_to_end_latency_sec,error_message"; got != want {
		t.Errorf("first nine columns = %s", got)
	}
	if strings.Join(header, ",") != strings.Join(benchmarks.Header(), ",") {
		t.Errorf("header = %v", header)
	}
}

func TestDenseRoutingWithAnEmbeddingModel(t *testing.T) {
	script := newScript(map[string]string{"what is (2+3)*4?": "calculator"}, map[string]string{"what is (2+3)*4?": `{"expression": "(2+3)*4"}`})
	llmSrv := llmtest.New(t, script.reply)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_EMBEDDING_MODEL"] = "scripted-embed"
	in := start(t, env)
	code, r := in.chat(t, "what is (2+3)*4?")
	if code != 200 || r["path"] != "calculator" || !strings.Contains(str(r["response"]), "20") {
		t.Fatalf("chat = %d %v", code, r)
	}
	if llmSrv.EmbeddingCalls() == 0 {
		t.Error("the router never asked the embedding model")
	}
}

// TestShutdownWithAnIdleConnection checks that a client which connected and
// sent nothing (an HTTP client's spare connection, a browser's preconnect)
// does not keep the server from shutting down: stop fails the test if run
// returns an error, which it does when shutdown runs out of time.
func TestShutdownWithAnIdleConnection(t *testing.T) {
	in := start(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in.stop()
}

// TestModelRoundTrips counts the model calls each kind of message costs
// through the real server, and checks that a task that needs two tools in
// turn is done in one message, every step in the trace and the CSV.
func TestModelRoundTrips(t *testing.T) {
	const twoTools = "convert 5 miles to km, then multiply by 3"
	script := newScript(map[string]string{
		"how many km is 5 miles?": "unit_converter",
		twoTools:                  "unit_converter",
		"translate into Klingon":  "need_tool",
	}, map[string]string{
		"how many km is 5 miles?": `{"value": 5, "from": "miles", "to": "km"}`,
		twoTools:                  `{"value": 5, "from": "miles", "to": "km"}`,
	})
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		// The first synthesizer call of the two-tool task calls the
		// calculator on the converter's result; the second answers.
		if isSynthesizer(r) && strings.HasPrefix(r.Messages[1].Text(), "convert 5 miles") && !ranTool(r, "calculator") {
			nums := regexp.MustCompile(`[0-9]+\.[0-9]+`).FindAllString(lastOutput(r), -1)
			return llmtest.Call("calculator", fmt.Sprintf(`{"expression": "%s * 3"}`, nums[len(nums)-1]))
		}
		return script.reply(r)
	})
	in := start(t, modelEnv(llmSrv))

	tests := []struct {
		message   string
		wantCalls int
		wantTools string
		want      string
	}{
		{"hello", 1, "", "Hello! I am a scripted model."},
		{"how many km is 5 miles?", 2, "unit_converter", "8.04"},
		{"translate into Klingon", 1, "", "don't have a tool"},
		{twoTools, 3, "unit_converter;calculator", "24.1"},
	}
	for _, tt := range tests {
		before := len(llmSrv.Requests())
		code, r := in.chat(t, tt.message)
		if code != 200 {
			t.Fatalf("%q: %d %v", tt.message, code, r)
		}
		got := len(llmSrv.Requests()) - before
		var tools []string
		for _, tool := range r["tools"].([]any) {
			tools = append(tools, tool.(string))
		}
		if got != tt.wantCalls || r["llm_calls"] != float64(tt.wantCalls) || strings.Join(tools, ";") != tt.wantTools || !strings.Contains(str(r["response"]), tt.want) {
			t.Errorf("%q: %d model calls (llm_calls %v), tools %v, response %q; want %d, %s, %q", tt.message, got, r["llm_calls"], tools, r["response"], tt.wantCalls, tt.wantTools, tt.want)
		}
		if tt.message == twoTools {
			var steps []string
			for _, s := range r["trace"].([]any) {
				st := s.(map[string]any)
				steps = append(steps, fmt.Sprint(st["node"], ":", st["tool"]))
				if st["node"] == "execute" && (st["arguments"] == nil || st["output"] == "") {
					t.Errorf("execute step without arguments or output: %v", st)
				}
			}
			if got := strings.Join(steps, ","); got != "classifier:<nil>,execute:unit_converter,synthesizer:<nil>,execute:calculator,synthesizer:<nil>" {
				t.Errorf("trace = %s", got)
			}
			if r["total_ms"] == nil || r["path"] != "unit_converter" {
				t.Errorf("total_ms %v, path %v", r["total_ms"], r["path"])
			}
		}
	}
	rows := in.rows(t)
	last := rows[len(rows)-1]
	// The answer after a tool streams too: tokens, then the result.
	_, _, evs := in.events(t, "/chat", `{"message": "how many km is 5 miles?"}`)
	var streamed strings.Builder
	for _, ev := range evs[:len(evs)-1] {
		var tok struct{ Text string }
		if name, data, _ := strings.Cut(ev, " "); name != "token" || json.Unmarshal([]byte(data), &tok) != nil {
			t.Errorf("event before the result: %s", ev)
		}
		streamed.WriteString(tok.Text)
	}
	var res struct{ Response string }
	name, data, _ := strings.Cut(evs[len(evs)-1], " ")
	if err := json.Unmarshal([]byte(data), &res); name != "result" || err != nil || len(evs) < 3 || res.Response != streamed.String() {
		t.Errorf("streamed tool answer = %v", evs)
	}
	if last["category"] != "unit_converter" || last["tools"] != "unit_converter;calculator" || last["llm_calls"] != "3" || last["tool_execution_success"] != "True" {
		t.Errorf("two-tool row = %v", last)
	}
}
