package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
)

// modelFaults are the ways a model can answer badly: each is the scripted
// model's answer to every request.
var modelFaults = []struct {
	name  string
	reply llmtest.Reply
}{
	{"500", llmtest.Fail(500)},
	{"429", llmtest.RateLimited("1")},
	{"hang past the timeout", llmtest.Hang()},
	{"connection cut", llmtest.Reply{Cut: true, CutAfter: -1}},
	{"stream cut", llmtest.Reply{Content: "half an answer and", Cut: true, CutAfter: 2}},
	{"empty reply", llmtest.Reply{}},
	{"invalid call arguments", llmtest.Call("calculator", `{"expression": `)},
	{"arguments not an object", llmtest.Call("calculator", `[1, 2]`)},
	{"unknown function", llmtest.Call("no_such_function", `{}`)},
	{"nonsense build", llmtest.Call("build_tool", `{"action":"frobnicate","tool":"../x"}`)},
	{"nonsense decision", llmtest.Call("decide_build", `not json at all`)},
	{"source of the wrong type", llmtest.Call("write_tool", `{"source": 7, "examples": "none"}`)},
	{"prose instead of a call", llmtest.Say("I would rather not { say")},
}

// faultDoors are the doors a model's answer reaches, each sent one request.
var faultDoors = []struct {
	name, path, body string
	stream           bool
}{
	{"chat", "/chat", `{"message":"what is 2+2? use the calculator"}`, false},
	{"streamed chat", "/chat", `{"message":"what is 2+2? use the calculator"}`, true},
	{"chat that builds", "/chat", `{"message":"make a tool that doubles a number"}`, false},
	{"build", "/api/tools/build", `{"request":"make a tool that doubles a number"}`, true},
	{"plan", "/api/tools/plan", `{"request":"make a tool that doubles a number"}`, false},
}

// TestNoModelFaultMakesA500 feeds every fault of a scripted model into every
// door: none may answer 500. A JSON answer is a JSON object; a stream is
// well formed and ends with exactly one result or error event.
func TestNoModelFaultMakesA500(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Say("ok")))
	env := modelEnv(srv)
	env["ADAPTBOT_MODEL_TIMEOUT"] = "300ms"
	env["ADAPTBOT_MODEL_RETRIES"] = "0"
	env["ADAPTBOT_RATE_LIMIT"] = "off"
	env["ADAPTBOT_BUILD_ATTEMPTS"] = "1"
	in := start(t, env)
	for _, f := range modelFaults {
		srv.SetScript(llmtest.Always(f.reply))
		for _, d := range faultDoors {
			req, err := http.NewRequest("POST", in.url+d.path, strings.NewReader(d.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if d.stream {
				req.Header.Set("Accept", "text/event-stream")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s, %s: %v", f.name, d.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			where := f.name + ", " + d.name
			if resp.StatusCode >= 500 && resp.StatusCode != 502 && resp.StatusCode != 503 && resp.StatusCode != 504 || resp.StatusCode == 500 {
				t.Errorf("%s: %d %s", where, resp.StatusCode, body)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				checkStream(t, where, body)
				continue
			}
			var obj map[string]any
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Errorf("%s: %d, not a JSON object: %s", where, resp.StatusCode, body)
			} else if resp.StatusCode != 200 && obj["error"] == nil {
				t.Errorf("%s: %d without an error: %s", where, resp.StatusCode, body)
			}
			// Arguments that are not JSON twice over are the model's
			// failure to use a tool: reported in a 200, never a fault of ours.
			if f.name == "invalid call arguments" && d.name == "chat" &&
				(resp.StatusCode != 200 || obj["parameter_extraction_success"] != false || obj["error"] == nil) {
				t.Errorf("%s: %d %s, want 200 with the failure reported", where, resp.StatusCode, body)
			}
		}
	}
}

// checkStream checks that body is a well-formed event stream whose last
// event, and only that one, is a result or an error with a status that is
// not 500.
func checkStream(t *testing.T, where string, body []byte) {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				t.Errorf("%s: event %s carries no JSON object: %s", where, event, line)
			}
			if event == "error" && v["status"] == float64(500) {
				t.Errorf("%s: error event with status 500: %s", where, line)
			}
			events = append(events, event)
		default:
			t.Errorf("%s: not an event stream line: %q", where, line)
		}
	}
	if len(events) == 0 {
		t.Errorf("%s: an empty stream", where)
		return
	}
	for i, e := range events {
		final := e == "result" || e == "error"
		if final != (i == len(events)-1) {
			t.Errorf("%s: events %v: want one result or error, last", where, events)
			return
		}
	}
}
