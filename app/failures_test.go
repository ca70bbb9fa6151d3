package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
	"adaptbot/toolbox"
)

// firstWordTool panics on a text without words or starting with "!", and
// answers "bad" with an error: a tool that fails in use in several ways.
// firstWordRepaired is its repair; both pass firstWordExamples.
// They are read when a test needs them, not at start: the test binary is
// also the sandbox's worker, which runs confined, away from these files.
func firstWordTool() string     { return learningFixture("first_word.go") }
func firstWordRepaired() string { return learningFixture("first_word_fixed.go") }
func firstWordExamples() string { return learningFixture("examples.json") }

// learningFixture reads one of the files of failures/testdata: first_word,
// a tool that fails in use every way a repair must handle, and its repair.
func learningFixture(name string) string {
	b, err := os.ReadFile(filepath.Join("..", "failures", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// withFirstWord adds first_word and its examples to a server's tools.
func withFirstWord(t *testing.T) func(dir string) {
	return func(dir string) {
		writeTool(t, dir, "first_word", firstWordTool())
		if err := os.WriteFile(filepath.Join(dir, "tools", "first_word", "examples.json"), []byte(firstWordExamples()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repairModel routes "first of X" to first_word with the text X ("nothing"
// for none), answers from the tool's output, and repairs first_word when
// asked to write it.
func repairModel(repairs *atomic.Int32) func(llmtest.Request) llmtest.Reply {
	return func(r llmtest.Request) llmtest.Reply {
		switch {
		case r.Forced() == "write_tool":
			repairs.Add(1)
			args, _ := json.Marshal(map[string]any{"source": firstWordRepaired(), "description": "Returns the first word of a text.", "category": "text",
				"examples": json.RawMessage(firstWordExamples())})
			return llmtest.Call("write_tool", string(args))
		case isSynthesizer(r):
			return llmtest.Say("The first word: " + lastOutput(r))
		case isClassifier(r):
			msg := ""
			for _, m := range r.Messages {
				if m.Role == "user" {
					msg = m.Text()
					break
				}
			}
			if text, ok := strings.CutPrefix(msg, "first of "); ok {
				if text == "nothing" {
					text = ""
				}
				args, _ := json.Marshal(map[string]string{"text": text})
				return llmtest.Call(toolbox.FunctionName("first_word"), string(args))
			}
		}
		return llmtest.Say("Hello.")
	}
}

func caseOf(t *testing.T, rep map[string]any, args string) map[string]any {
	t.Helper()
	cases, _ := rep["cases"].([]any)
	for _, c := range cases {
		m := c.(map[string]any)
		if str(m["arguments"]) == args {
			return m
		}
	}
	return nil
}

// TestLearningFromUse is the whole loop over HTTP, as people meet it: a
// tool that panics on some inputs and fails on others collects its cases
// from runs and chats; the API, the pages and the command line show them;
// a repair gives a version that passes the old examples and the cases,
// which are examples from then on, and the CSV logs it as a build_modify
// row; feedback on an answer is in its trace, on the dashboard and in
// /api/benchmarks; bad input gets a 4xx and changes nothing.
func TestLearningFromUse(t *testing.T) {
	var repairs atomic.Int32
	env := modelEnv(llmtest.New(t, repairModel(&repairs)))
	env["ADAPTBOT_AUTO_REPAIR"] = "off"
	in := start(t, env, withFirstWord(t))

	// Failures from direct runs and from a chat.
	if code, r := in.do(t, "POST", "/api/tools/first_word/run", `{"text": ""}`); code != 422 || r["kind"] != "panic" {
		t.Fatalf("run on nothing = %d %v", code, r)
	}
	if code, _ := in.do(t, "POST", "/api/tools/first_word/run", `{"text": "bad"}`); code != 422 {
		t.Fatalf("run on bad = %d", code)
	}
	if code, _ := in.do(t, "POST", "/api/tools/first_word/run", `{"text": "all good"}`); code != 200 {
		t.Fatalf("run on words = %d", code)
	}
	code, chat := in.chat(t, "first of nothing")
	if code != 200 || chat["tool_execution_success"] != false {
		t.Fatalf("chat = %d %v", code, chat)
	}

	code, rep := in.do(t, "GET", "/api/tools/first_word/failures", "")
	if code != 200 || rep["open"] != float64(1) || rep["errors"] != float64(1) {
		t.Fatalf("failures = %d %v", code, rep)
	}
	empty, bad := caseOf(t, rep, `{"text":""}`), caseOf(t, rep, `{"text":"bad"}`)
	if empty == nil || empty["kind"] != "panic" || empty["count"] != float64(2) || empty["request_id"] != chat["request_id"] {
		t.Errorf("the empty text's case = %v", empty)
	}
	if bad == nil || bad["kind"] != "error" || !strings.Contains(str(bad["message"]), "bad is not a word") {
		t.Errorf("the bad text's case = %v", bad)
	}
	// The case links to a trace that is there.
	if code, tr := in.do(t, "GET", "/api/requests/"+str(empty["request_id"]), ""); code != 200 || tr["kind"] != "chat" {
		t.Errorf("the case's trace = %d %v", code, tr)
	}
	if code, sum := in.do(t, "GET", "/api/failures", ""); code != 200 || str(sum["tools"]) == "{}" {
		t.Errorf("summary = %d %v", code, sum)
	}
	// The pages carry the places the scripts fill, and the scripts.
	_, page := in.raw(t, "GET", "/tools/first_word", "")
	for _, want := range []string{`id="failures"`, `id="failures-table"`, `id="repair"`, `src="/static/tool.js"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the tool's page lacks %s", want)
		}
	}
	if _, list := in.raw(t, "GET", "/tools", ""); !strings.Contains(string(list), `data-failures="first_word"`) {
		t.Error("the tools page has no failure cases column for first_word")
	}
	if _, js := in.raw(t, "GET", "/static/tool.js", ""); !strings.Contains(string(js), "/failures") || !strings.Contains(string(js), "/repair") {
		t.Error("tool.js does not read the failures or repair")
	}
	// The command line, through the server.
	cli := cliEnv(in.dir, serverAddr(t, in))
	out, err := runEnv(t, cli, nil, "tools", "failures", "first_word")
	if err != nil || !strings.Contains(out, "1 open") || !strings.Contains(out, `{"text":"bad"}`) || !strings.Contains(out, "panic") {
		t.Errorf("tools failures = %v\n%s", err, out)
	}

	// Bad input: a 4xx with a message, and nothing changes.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/tools/nope/repair", "", 404},
		{"POST", "/api/tools/calculator/repair", "", 409},                                       // no cases
		{"POST", "/api/tools/first_word/repair", `{"cases": ["0000000000000000"]}`, 400},        // unknown case
		{"POST", "/api/tools/first_word/repair", `{"cases": "all"}`, 400},                       // malformed
		{"POST", "/api/requests/" + str(chat["request_id"]) + "/feedback", `{"score": 7}`, 400}, // a score of 7
		{"POST", "/api/requests/00000000000000ff/feedback", `{"score": 1}`, 404},                // unknown request
		{"POST", "/api/requests/" + str(chat["request_id"]) + "/feedback", `{"score": 1, "x": 2}`, 400},
		{"DELETE", "/api/tools/first_word/failures/nope", "", 404},
	} {
		code, r := in.do(t, c.method, c.path, c.body)
		if code != c.want || str(r["error"]) == "" {
			t.Errorf("%s %s %s = %d %v, want %d with a message", c.method, c.path, c.body, code, r, c.want)
		}
	}
	if repairs.Load() != 0 {
		t.Fatal("a refused repair reached the model")
	}
	if code, tr := in.do(t, "GET", "/api/requests/"+str(chat["request_id"]), ""); code != 200 || tr["feedback"] != nil {
		t.Errorf("a refused feedback was stored: %v", tr["feedback"])
	}

	// A repair by a person, from the command line, of the panic and of the
	// clear error they want answered.
	out, err = runEnv(t, cli, nil, "tools", "repair", "first_word", str(empty["id"]), str(bad["id"]))
	if err != nil || !strings.Contains(out, "Repaired first_word: version 2") || !strings.Contains(out, "kept as an example") {
		t.Fatalf("tools repair = %v\n%s", err, out)
	}
	if code, r := in.do(t, "POST", "/api/tools/first_word/run", `{"text": "bad"}`); code != 200 || r["output"] != "first: bad" {
		t.Errorf("the repaired tool on bad = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/first_word/run", `{"text": ""}`); code != 422 || r["kind"] != "error" || !strings.Contains(str(r["error"]), "has no words") {
		t.Errorf("the repaired tool on nothing = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/first_word/test", ""); code != 200 || r["ok"] != true || len(r["results"].([]any)) != 3 {
		t.Errorf("the repaired tool's examples (the old two and the fixed case) = %d %v", code, r)
	}
	_, rep = in.do(t, "GET", "/api/tools/first_word/failures", "")
	if c := caseOf(t, rep, `{"text":"bad"}`); c == nil || c["fixed_in"] != float64(2) || rep["open"] != float64(0) {
		t.Errorf("after the repair: %v", rep)
	}
	_, vs := in.do(t, "GET", "/api/tools/first_word/versions", "")
	if v, _ := vs["versions"].([]any); len(v) != 2 || !strings.Contains(str(v[1].(map[string]any)["note"]), "Repair of 2 failure cases") {
		t.Errorf("versions = %v", vs)
	}
	rows := in.rows(t)
	var modify []map[string]string
	for _, r := range rows {
		if r["category"] == "build_modify" && r["error_kind"] == "" {
			modify = append(modify, r)
		}
	}
	if len(modify) != 1 || modify[0]["intent"] != "BUILD" || modify[0]["door"] != "cli" || modify[0]["error_kind"] != "" || !strings.HasPrefix(modify[0]["query"], "repair first_word") {
		t.Errorf("build_modify rows = %v", modify)
	}

	// Feedback on the chat answer: in its trace, in /api/benchmarks and on
	// the dashboard's data; the thumbs-down adds the call as a case.
	code, chat2 := in.chat(t, "first of hello world")
	if code != 200 {
		t.Fatalf("chat = %d %v", code, chat2)
	}
	code, fb := in.do(t, "POST", "/api/requests/"+str(chat2["request_id"])+"/feedback", `{"score": -1, "comment": "it should skip greetings"}`)
	if code != 200 || fb["score"] != float64(-1) {
		t.Fatalf("feedback = %d %v", code, fb)
	}
	if code, _ := in.do(t, "POST", "/api/requests/"+str(chat2["request_id"])+"/feedback", `{"score": 1}`); code != 409 {
		t.Errorf("second feedback = %d, want 409", code)
	}
	_, tr := in.do(t, "GET", "/api/requests/"+str(chat2["request_id"]), "")
	if f, _ := tr["feedback"].(map[string]any); f == nil || f["score"] != float64(-1) || f["comment"] != "it should skip greetings" {
		t.Errorf("the trace's feedback = %v", tr["feedback"])
	}
	_, bench := in.do(t, "GET", "/api/benchmarks", "")
	f, _ := bench["feedback"].(map[string]any)
	if f == nil || f["down"] != float64(1) || f["up"] != float64(0) || str(f["tools"]) == "[]" {
		t.Errorf("/api/benchmarks feedback = %v", bench["feedback"])
	}
	_, byTool := in.do(t, "GET", "/api/benchmarks?tool=first_word&intent=FEEDBACK", "")
	if f, _ := byTool["feedback"].(map[string]any); f == nil || f["down"] != float64(1) || byTool["requests"] != float64(0) {
		t.Errorf("feedback on first_word = %v, requests %v", byTool["feedback"], byTool["requests"])
	}
	if code, page := in.raw(t, "GET", "/dashboard", ""); code != 200 || !strings.Contains(string(page), `id="chart-satisfaction"`) {
		t.Errorf("the dashboard has no satisfaction chart (%d)", code)
	}
	_, rep = in.do(t, "GET", "/api/tools/first_word/failures", "")
	if c := caseOf(t, rep, `{"text":"hello world"}`); c == nil || c["kind"] != "feedback" || c["status"] != "unconfirmed" || c["comment"] != "it should skip greetings" {
		t.Errorf("the thumbs-down's case = %v", c)
	}
	var feedbackRows int
	for _, r := range in.rows(t) {
		if r["intent"] == "FEEDBACK" && r["error_kind"] == "" {
			feedbackRows++
			if r["rated_request"] != str(chat2["request_id"]) || r["score"] != "-1" || r["category"] != "first_word" {
				t.Errorf("feedback row = %v", r)
			}
		}
	}
	if feedbackRows != 1 {
		t.Errorf("%d feedback rows, want 1 (and one for each refusal)", feedbackRows)
	}
}

// TestAutomaticRepairProposesAfterThreeCases: in propose mode (the
// default), the third distinct case (a failure or a clear error) starts a
// repair by the server; its
// version waits for approval while version 1 serves, the CSV logs it from
// the internal door, and approving it makes it serve.
func TestAutomaticRepairProposesAfterThreeCases(t *testing.T) {
	var repairs atomic.Int32
	in := start(t, modelEnv(llmtest.New(t, repairModel(&repairs))), withFirstWord(t))
	for _, text := range []string{`""`, `"  "`, `"  "`} {
		in.do(t, "POST", "/api/tools/first_word/run", `{"text": `+text+`}`)
	}
	if repairs.Load() != 0 {
		t.Fatal("a repair started after two failures")
	}
	// A clear error counts as well: the repair's model judges it.
	in.do(t, "POST", "/api/tools/first_word/run", `{"text": "bad"}`)
	poll.Until(t, "a proposed version", func() bool {
		_, r := in.do(t, "GET", "/api/tools/first_word", "")
		return r["pending_version"] == float64(2)
	})
	if code, r := in.do(t, "POST", "/api/tools/first_word/run", `{"text": "!x"}`); code != 422 || r["kind"] != "panic" {
		t.Errorf("before approval = %d %v, want version 1 panicking", code, r)
	}
	var row map[string]string
	poll.Until(t, "the repair's row", func() bool {
		for _, r := range in.rows(t) {
			if r["category"] == "build_modify" {
				row = r
			}
		}
		return row != nil
	})
	if row["door"] != "internal" || row["intent"] != "BUILD" || row["error_kind"] != "" {
		t.Errorf("automatic repair row = %v", row)
	}
	_, rep := in.do(t, "GET", "/api/tools/first_word/failures", "")
	if rs, _ := rep["repairs"].([]any); len(rs) != 1 || rs[0].(map[string]any)["auto"] != true || rs[0].(map[string]any)["pending"] != true {
		t.Errorf("repairs = %v", rep["repairs"])
	}
	if code, r := in.do(t, "POST", "/api/tools/first_word/approve", ""); code != 200 || r["version"] != float64(2) {
		t.Fatalf("approve = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/first_word/run", `{"text": "!x"}`); code != 200 || r["output"] != "first: !x" {
		t.Errorf("after approval = %d %v", code, r)
	}
	// The old examples alone: an automatic repair is the server's, so the
	// case that now gives a result, someone's input, is no example (issue
	// 27: service/examples.go).
	if code, r := in.do(t, "POST", "/api/tools/first_word/test", ""); code != 200 || r["ok"] != true || len(r["results"].([]any)) != 2 {
		t.Errorf("the approved version's examples = %d %v", code, r)
	}
	if n := repairs.Load(); n != 1 {
		t.Errorf("%d repairs", n)
	}
}
