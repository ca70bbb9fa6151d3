package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"adaptbot/config"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/service"
	"adaptbot/toolbox"
	"adaptbot/web"
)

// romanScript is a model that builds the roman_numerals tool when asked.
func romanScript(t *testing.T) func(llmtest.Request) llmtest.Reply {
	args, _ := json.Marshal(map[string]any{
		"source": romanTool, "description": "Writes a whole number in Roman numerals.", "category": "text",
		"examples": []map[string]any{{"input": map[string]any{"number": 4}, "contains": "IV"}, {"input": map[string]any{"number": 9}, "contains": "IX"}},
	})
	return func(r llmtest.Request) llmtest.Reply {
		if isClassifier(r) {
			if strings.HasPrefix(r.LastUser(), "make a tool") {
				return llmtest.Call("build_tool", `{"action":"create","tool":"roman_numerals","summary":"Roman numerals."}`)
			}
			return llmtest.Say("ok")
		}
		switch f := r.Forced(); f {
		case "decide_build": // the Create Tool button's build decides in the generator
			return llmtest.Call(f, `{"op":"CREATE","tool":"roman_numerals","summary":"Roman numerals."}`)
		case "write_tool":
			return llmtest.Call(f, string(args))
		}
		return llmtest.Say("ok")
	}
}

func TestBuildFromChatThenDeleteAndRollback(t *testing.T) {
	llmSrv := llmtest.New(t, romanScript(t))
	in := start(t, modelEnv(llmSrv))

	code, r := in.chat(t, "make a tool that converts numbers to roman numerals")
	if code != 200 || r["intent"] != "BUILD" {
		t.Fatalf("chat build = %d %v", code, r)
	}
	build, _ := r["tool_build"].(map[string]any)
	if build["ok"] != true || build["tool"] != "roman_numerals" || build["action"] != "create" {
		t.Fatalf("tool_build = %v", r["tool_build"])
	}
	// The classifier decided the build: one model call before the code.
	if reqs := llmSrv.Requests(); len(reqs) < 2 || !isClassifier(reqs[0]) || reqs[1].Forced() != "write_tool" {
		t.Errorf("model calls before the code: %d", len(reqs))
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number": 2026}`); code != 200 || r["output"] != "MMXXVI" {
		t.Errorf("run new tool = %d %v", code, r)
	}
	if code, r := in.do(t, "DELETE", "/api/tools/roman_numerals", ""); code != 200 || r["ok"] != true {
		t.Fatalf("delete = %d %v", code, r)
	}
	if code, _ := in.do(t, "GET", "/api/tools/roman_numerals", ""); code != 404 {
		t.Errorf("deleted tool still served: %d", code)
	}
	code, r = in.do(t, "GET", "/api/tools/roman_numerals/versions", "")
	if vs, _ := r["versions"].([]any); code != 200 || len(vs) != 1 {
		t.Fatalf("versions = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/rollback", `{"version": 7}`); code != 404 {
		t.Errorf("rollback to a missing version = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/rollback", `{"version": 1}`); code != 200 || r["version"] != float64(2) {
		t.Fatalf("rollback = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number": 4}`); code != 200 || r["output"] != "IV" {
		t.Errorf("run restored tool = %d %v", code, r)
	}

	rows := in.rows(t)
	var cats []string
	for _, row := range rows {
		cats = append(cats, row["intent"]+":"+row["category"])
	}
	// Every operation writes one row, a refused one too: the rollback to
	// a version that is not kept is there, with its kind of failure.
	if got := strings.Join(cats, ","); got != "BUILD:build_create,RUN:roman_numerals,BUILD:build_delete,BUILD:build_rollback,BUILD:build_rollback,RUN:roman_numerals" {
		t.Errorf("rows = %s", got)
	}
	if len(rows) == 6 && (rows[3]["error_kind"] != "not_found" || rows[4]["error_kind"] != "" || rows[2]["door"] != "http") {
		t.Errorf("rollback rows = %v, %v", rows[3], rows[4])
	}
	if rows[0]["build_attempts"] != "1" || rows[0]["tool_generation_time_sec"] == "" {
		t.Errorf("build row = %v", rows[0])
	}
}

// events posts body to path asking for Server-Sent Events and returns the
// status, the content type and the events as "name data" lines, in order.
func (in *instance) events(t *testing.T, path, body string) (int, string, []string) {
	t.Helper()
	req, err := http.NewRequest("POST", in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out []string
	for _, frame := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		name, data, _ := strings.Cut(frame, "\n")
		out = append(out, strings.TrimPrefix(name, "event: ")+" "+strings.TrimPrefix(data, "data: "))
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), out
}

// TestChatStreamsBuildProgress checks that a build asked for in chat shows
// its steps as they happen, as the Create Tool button's build does, when
// the client accepts Server-Sent Events; and that errors arrive as an event.
func TestChatStreamsBuildProgress(t *testing.T) {
	llmSrv := llmtest.New(t, romanScript(t))
	in := start(t, modelEnv(llmSrv))
	code, ctype, evs := in.events(t, "/chat", `{"message": "make a tool that converts numbers to roman numerals"}`)
	if code != 200 || ctype != "text/event-stream" || len(evs) < 3 {
		t.Fatalf("chat stream = %d %q %v", code, ctype, evs)
	}
	last := evs[len(evs)-1]
	var stages []string
	for _, ev := range evs[:len(evs)-1] {
		name, data, _ := strings.Cut(ev, " ")
		var st struct{ Stage, Message string }
		if err := json.Unmarshal([]byte(data), &st); name != "progress" || err != nil || st.Message == "" {
			t.Fatalf("event before the result: %s", ev)
		}
		stages = append(stages, st.Stage)
	}
	if !slices.Contains(stages, "compile") || stages[len(stages)-1] != "done" {
		t.Errorf("progress stages = %v", stages)
	}
	name, data, _ := strings.Cut(last, " ")
	var res struct {
		Intent    string `json:"intent"`
		RequestID string `json:"request_id"`
		ToolBuild struct {
			OK   bool   `json:"ok"`
			Tool string `json:"tool"`
		} `json:"tool_build"`
	}
	if err := json.Unmarshal([]byte(data), &res); name != "result" || err != nil || res.Intent != "BUILD" ||
		!res.ToolBuild.OK || res.ToolBuild.Tool != "roman_numerals" || res.RequestID == "" {
		t.Fatalf("last event = %s", last)
	}
	if rows := in.rows(t); len(rows) != 1 || rows[0]["category"] != "build_create" {
		t.Errorf("rows = %v", rows)
	}

	// A plain chat over the stream is the answer's tokens, then one result
	// event whose response is those tokens.
	_, _, evs = in.events(t, "/chat", `{"message": "hello"}`)
	var streamed strings.Builder
	for _, ev := range evs[:len(evs)-1] {
		var tok struct{ Text string }
		if name, data, _ := strings.Cut(ev, " "); name != "token" || json.Unmarshal([]byte(data), &tok) != nil {
			t.Errorf("event before the result: %s", ev)
		}
		streamed.WriteString(tok.Text)
	}
	name, data, _ = strings.Cut(evs[len(evs)-1], " ")
	var plain struct{ Response string }
	if err := json.Unmarshal([]byte(data), &plain); name != "result" || err != nil || plain.Response != "ok" || streamed.String() != "ok" {
		t.Errorf("plain chat stream = %v", evs)
	}
	// Bad input is still a plain 400 before any stream starts.
	if code, ctype, _ := in.events(t, "/chat", `{"message": ""}`); code != 400 || !strings.HasPrefix(ctype, "application/json") {
		t.Errorf("empty message over a stream = %d %q", code, ctype)
	}

	// Without a model the stream says so, with the setting that turns one on.
	bare := start(t, nil)
	_, _, evs = bare.events(t, "/chat", `{"message": "make a tool"}`)
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "error ") || !strings.Contains(evs[0], `"status":503`) ||
		!strings.Contains(evs[0], "ADAPTBOT_") {
		t.Errorf("no-model stream = %v", evs)
	}
}

func TestBuildStreamsProgressAndFailsClearly(t *testing.T) {
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		switch f := r.Forced(); f {
		case "decide_build":
			return llmtest.Call(f, `{"op":"CREATE","tool":"shell_runner","summary":"runs commands"}`)
		case "write_tool":
			// Never gets it right: a forbidden import every time.
			return llmtest.Call(f, `{"source":"// Package shell_runner runs commands.\npackage shell_runner\n\nimport (\n\t\"context\"\n\t\"os/exec\"\n)\n\ntype Input struct{ Cmd string `+"`json:\\\"cmd\\\"`"+` }\n\nfunc Execute(ctx context.Context, in Input) (string, error) {\n\tb, err := exec.Command(in.Cmd).Output()\n\treturn string(b), err\n}\n","description":"runs commands","category":"system","examples":[{"input":{"cmd":"id"},"contains":"uid"},{"input":{"cmd":"ls"},"contains":""}]}`)
		}
		return llmtest.Say("ok")
	})
	in := start(t, modelEnv(llmSrv))
	code, body := in.raw(t, "POST", "/api/tools/build", `{"request": "make a tool that runs shell commands"}`)
	if code != 200 {
		t.Fatalf("build = %d %s", code, body)
	}
	events := string(body)
	for _, want := range []string{"event: progress", `"stage":"repair"`, "event: result", `"ok":false`, "os/exec"} {
		if !strings.Contains(events, want) {
			t.Errorf("stream lacks %q:\n%s", want, events)
		}
	}
	if code, _ := in.do(t, "GET", "/api/tools/shell_runner", ""); code != 404 {
		t.Errorf("a rejected build wrote a tool: %d", code)
	}
	matches, _ := filepath.Glob(filepath.Join(in.dir, "tools", "shell_runner*"))
	if len(matches) != 0 {
		t.Errorf("files written: %v", matches)
	}
	rows := in.rows(t)
	if len(rows) != 1 || rows[0]["category"] != "build_create" || rows[0]["build_attempts"] != "3" || !strings.Contains(rows[0]["error_message"], "os/exec") {
		t.Errorf("rows = %v", rows)
	}
	if code, r := in.do(t, "POST", "/api/tools/build", `{"request": ""}`); code != 400 {
		t.Errorf("empty request = %d %v", code, r)
	}
}

// TestAdminTokenBeyondLoopback checks who may build and run when the server
// listens beyond loopback, without listening anywhere.
func TestAdminTokenBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "r.json")})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		addr, token, auth string
		want              int
		msg               string
	}{
		{"127.0.0.1:3000", "", "", 404, "no tool named"},
		{"0.0.0.0:3000", "s3cret-admin-token", "", 401, "Authorization: Bearer"},
		{"0.0.0.0:3000", "s3cret-admin-token", "Bearer wrong", 401, "not valid"},
		{"0.0.0.0:3000", "s3cret-admin-token", "Bearer s3cret-admin-token", 404, "no tool named"},
	}
	for _, tt := range tests {
		svc := service.New(service.Deps{Tools: toolbox.New(reg, nil), Registry: reg, Log: log})
		cfg := config.Config{Addr: tt.addr, AdminToken: tt.token}
		s := web.NewServer(svc, testAuth(t, cfg), nil, edgeOptions(cfg, log))
		client := listening(t, s)
		req := httptest.NewRequest("POST", "/api/tools/nope/run", strings.NewReader(`{}`))
		req.Host = "127.0.0.1:3000"
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := client.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.want || !strings.Contains(string(body), tt.msg) {
			t.Errorf("%s token=%q auth=%q: %d %s", tt.addr, tt.token, tt.auth, resp.StatusCode, body)
		}
	}
}
