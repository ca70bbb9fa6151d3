package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// TestModelStatusInHealthz: /healthz says which model, at which URL, and
// whether it answered the last check, against the scripted
// OpenAI-compatible server and against a URL where nothing listens.
func TestModelStatusInHealthz(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Say("hi") })
	in := start(t, modelEnv(srv))
	var m map[string]any
	poll.Until(t, "the first model check", func() bool {
		_, h := in.do(t, "GET", "/healthz", "")
		m, _ = h["model"].(map[string]any)
		return m != nil && m["reachable"] != nil
	})
	if m["provider"] != "openai" || m["name"] != "scripted" || m["url"] != srv.BaseURL()+"/models" || m["reachable"] != true || m["error"] != nil {
		t.Errorf("model = %v", m)
	}

	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	in2 := start(t, map[string]string{"OPENAI_BASE_URL": dead, "OPENAI_API_KEY": "x"})
	poll.Until(t, "the first model check", func() bool {
		_, h := in2.do(t, "GET", "/healthz", "")
		m, _ = h["model"].(map[string]any)
		return m != nil && m["reachable"] != nil
	})
	if m["reachable"] != false || m["url"] != dead+"/models" || !strings.Contains(str(m["error"]), ln.Addr().String()) {
		t.Errorf("unreachable model = %v", m)
	}
}

// TestTraceStoreKeepsEveryRequest: a direct run and a chat are stored, and
// GET /api/requests/<id> returns them, the chat with its result JSON.
func TestTraceStoreKeepsEveryRequest(t *testing.T) {
	srv := llmtest.New(t, newScript(map[string]string{"what is 2+2?": "calculator"}, map[string]string{"what is 2+2?": `{"expression":"2+2"}`}).reply)
	in := start(t, modelEnv(srv))
	code, run := in.do(t, "POST", "/api/tools/calculator/run", `{"expression":"6*7"}`)
	if code != 200 {
		t.Fatalf("run = %d %v", code, run)
	}
	code, r := in.do(t, "GET", "/api/requests/"+str(run["request_id"]), "")
	res, _ := r["result"].(map[string]any)
	if code != 200 || r["kind"] != "run" || r["tool"] != "calculator" || res == nil || !strings.Contains(str(res["output"]), "42") {
		t.Errorf("stored run = %d %v", code, r)
	}
	code, chat := in.chat(t, "what is 2+2?")
	if code != 200 {
		t.Fatalf("chat = %d %v", code, chat)
	}
	code, r = in.do(t, "GET", "/api/requests/"+str(chat["request_id"]), "")
	res, _ = r["result"].(map[string]any)
	if code != 200 || r["kind"] != "chat" || res == nil || res["response"] != chat["response"] || res["request_id"] != chat["request_id"] {
		t.Fatalf("stored chat = %d %v", code, r)
	}
	if steps, _ := res["trace"].([]any); len(steps) == 0 {
		t.Errorf("stored chat has no trace: %v", res)
	}
	if code, r := in.do(t, "GET", "/api/requests/nope", ""); code != 404 || !strings.Contains(str(r["error"]), "nope") {
		t.Errorf("unknown request = %d %v", code, r)
	}
	// The file sits beside the CSV.
	data, err := os.ReadFile(filepath.Join(in.dir, "benchmarks", "requests.jsonl"))
	if err != nil || strings.Count(string(data), "\n") != 2 {
		t.Errorf("requests.jsonl = %q, %v", data, err)
	}
}

// TestReviewBeforeServing: with ADAPTBOT_REVIEW=on a hand edit waits as
// pending while version 1 keeps serving, and approval makes it serve.
func TestReviewBeforeServing(t *testing.T) {
	in := start(t, map[string]string{"ADAPTBOT_REVIEW": "on"})
	src, err := os.ReadFile("../tools/calculator/calculator.go")
	if err != nil {
		t.Fatal(err)
	}
	writeTool(t, in.dir, "calculator", strings.Replace(string(src), `"the expression is empty"`, `"the expression is blank"`, 1))
	var e map[string]any
	poll.Until(t, "the edit to be held", func() bool {
		_, e = in.do(t, "GET", "/api/tools/calculator", "")
		return e["status"] == "pending"
	})
	if e["version"] != float64(1) || e["pending_version"] != float64(2) || !strings.Contains(str(e["code"]), "is empty") {
		t.Errorf("pending entry = %v", e)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression":" "}`); code != 422 || !strings.Contains(str(r["error"]), "is empty") {
		t.Errorf("run while pending = %d %v; want version 1's error", code, r)
	}
	code, page := in.raw(t, "GET", "/tools/calculator", "")
	if code != 200 || !strings.Contains(string(page), "Version 2 waits for approval") || !strings.Contains(string(page), `id="approve"`) {
		t.Errorf("tool page while pending = %d", code)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/approve", ""); code != 200 || r["version"] != float64(2) || r["status"] != "ok" {
		t.Fatalf("approve = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression":" "}`); code != 422 || !strings.Contains(str(r["error"]), "is blank") {
		t.Errorf("run after approval = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/approve", ""); code != 409 {
		t.Errorf("second approve = %d %v", code, r)
	}
}

// TestToolPagesAndDiffAPI covers the pages' server side and the diff
// endpoint's answers to bad input.
func TestToolPagesAndDiffAPI(t *testing.T) {
	in := start(t, nil, withExamples("unit_converter"))
	code, page := in.raw(t, "GET", "/tools", "")
	for _, want := range []string{"calculator", "weather_forecast", `id="search"`, "/static/tools.js"} {
		if code != 200 || !strings.Contains(string(page), want) {
			t.Errorf("/tools = %d, lacks %q", code, want)
		}
	}
	code, page = in.raw(t, "GET", "/tools/unit_converter", "")
	for _, want := range []string{`name="value"`, `name="from"`, `name="to"`, `class="chroma"`, "contains &#34;= 3.10685&#34;"} {
		if code != 200 || !strings.Contains(string(page), want) {
			t.Errorf("/tools/unit_converter = %d, lacks %q", code, want)
		}
	}
	// Every page works under script-src 'self': no inline script, no inline
	// event handler (and no inline style either).
	inline := regexp.MustCompile(`<script>|<script [^>]*>[^<]|\son[a-z]+=|<style|\sstyle=`)
	for _, p := range []string{"/", "/tools", "/tools/unit_converter", "/dashboard"} {
		_, page := in.raw(t, "GET", p, "")
		if m := inline.Find(page); m != nil {
			t.Errorf("%s has inline code: %q", p, m)
		}
	}
	if code, _ := in.raw(t, "GET", "/tools/nope", ""); code != 404 {
		t.Errorf("/tools/nope = %d", code)
	}
	for path, want := range map[string]int{
		"/api/tools/calculator/diff":             400, // one version: nothing before it
		"/api/tools/calculator/diff?from=x&to=1": 400,
		"/api/tools/calculator/diff?from=1&to=9": 404,
		"/api/tools/nope/diff":                   404,
		"/api/tools/calculator/diff?from=1&to=1": 200,
	} {
		if code, r := in.do(t, "GET", path, ""); code != want {
			t.Errorf("GET %s = %d %v, want %d", path, code, r, want)
		}
	}
	code, r := in.do(t, "POST", "/api/tools/unit_converter/test", "")
	if code != 200 || r["ok"] != true {
		t.Errorf("test = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/test", ""); code != 404 || !strings.Contains(str(r["error"]), "examples") {
		t.Errorf("test without examples = %d %v", code, r)
	}
	// A broken file is highlighted with its error; the last good version serves.
	writeTool(t, in.dir, "text_stats", "package text_stats\n\nfunc broken( {\n")
	poll.Until(t, "text_stats to be broken", func() bool {
		_, e := in.do(t, "GET", "/api/tools/text_stats", "")
		return e["status"] == "broken"
	})
	code, page = in.raw(t, "GET", "/tools", "")
	if code != 200 || !strings.Contains(string(page), `class="tool broken"`) || !strings.Contains(string(page), "last error:") {
		t.Errorf("/tools does not highlight the broken tool")
	}
	for _, f := range []string{"chat.js", "vendor/marked.umd.js", "vendor/purify.min.js", "chroma.css", "app.css"} {
		if code, _ := in.raw(t, "GET", "/static/"+f, ""); code != 200 {
			t.Errorf("/static/%s = %d", f, code)
		}
	}
	if code, _ := in.raw(t, "GET", "/static/../templates.go", ""); code == 200 {
		t.Error("/static/ serves files outside static/")
	}
}

// TestBuildPlan: the page learns what Create Tool will build before it
// starts; nothing is built by asking.
func TestBuildPlan(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if r.Forced() == "decide_build" {
			return llmtest.Call("decide_build", `{"op":"CREATE","tool":"roman_numerals","summary":"Convert a whole number to Roman numerals.","inputs":["number (integer)"]}`)
		}
		return llmtest.Say("?")
	})
	in := start(t, modelEnv(srv))
	code, r := in.do(t, "POST", "/api/tools/plan", `{"request":"convert 12 to roman numerals"}`)
	if code != 200 || r["op"] != "create" || r["tool"] != "roman_numerals" || str(r["inputs"]) != `["number (integer)"]` {
		t.Errorf("plan = %d %v", code, r)
	}
	if code, _ := in.do(t, "GET", "/api/tools/roman_numerals", ""); code != 404 {
		t.Errorf("a plan built the tool: %d", code)
	}
	if code, _ := in.do(t, "POST", "/api/tools/plan", `{}`); code != 400 {
		t.Errorf("empty plan request = %d", code)
	}
	noModel := start(t, nil)
	if code, r := noModel.do(t, "POST", "/api/tools/plan", `{"request":"x"}`); code != 503 {
		t.Errorf("plan without a model = %d %v", code, r)
	}
}

// TestReviewHoldsABuild: with review on, a build passes its checks and
// waits; the model is not offered the tool until it is approved.
func TestReviewHoldsABuild(t *testing.T) {
	srv := llmtest.New(t, romanScript(t))
	in := start(t, map[string]string{"ADAPTBOT_REVIEW": "on", "OPENAI_BASE_URL": srv.BaseURL(), "OPENAI_API_KEY": "x", "ADAPTBOT_MODEL": "scripted"})
	code, _, evs := in.events(t, "/api/tools/build", `{"request":"make a tool that writes roman numerals"}`)
	last := evs[len(evs)-1]
	if code != 200 || !strings.HasPrefix(last, "result ") || !strings.Contains(last, `"pending":true`) || !strings.Contains(last, "waits for approval") {
		t.Fatalf("build under review = %d %v", code, evs)
	}
	_, e := in.do(t, "GET", "/api/tools/roman_numerals", "")
	if e["status"] != "pending" || e["serving"] == true || e["pending_version"] != float64(1) {
		t.Errorf("built tool under review = %v", e)
	}
	if code, _ := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number":4}`); code != 409 {
		t.Errorf("run of a pending new tool = %d, want 409", code)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/approve", ""); code != 200 || r["version"] != float64(1) {
		t.Fatalf("approve = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number":4}`); code != 200 || r["output"] != "IV" {
		t.Errorf("run after approval = %d %v", code, r)
	}
}
