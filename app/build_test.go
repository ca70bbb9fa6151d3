package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/registry"
)

// romanScript is a model that builds the roman_numerals tool when asked.
func romanScript(t *testing.T) func(llmtest.Request) llmtest.Reply {
	args, _ := json.Marshal(map[string]any{
		"source": romanTool, "description": "Writes a whole number in Roman numerals.", "category": "text",
		"examples": []map[string]any{{"input": map[string]any{"number": 4}, "contains": "IV"}, {"input": map[string]any{"number": 9}, "contains": "IX"}},
	})
	return func(r llmtest.Request) llmtest.Reply {
		switch f := r.Forced(); f {
		case "set_intent":
			if strings.HasPrefix(r.LastUser(), "make a tool") {
				return llmtest.Call(f, `{"intent":"BUILD"}`)
			}
			return llmtest.Call(f, `{"intent":"CHAT"}`)
		case "decide_build":
			return llmtest.Call(f, `{"op":"CREATE","tool":"roman_numerals","summary":"Roman numerals."}`)
		case "write_tool":
			return llmtest.Call(f, string(args))
		case "route":
			return llmtest.Call(f, `{"decision":"general"}`)
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
	if got := strings.Join(cats, ","); got != "BUILD:build_create,RUN:roman_numerals,BUILD:build_delete,RUN:roman_numerals" {
		t.Errorf("rows = %s", got)
	}
	if rows[0]["build_attempts"] != "1" || rows[0]["tool_generation_time_sec"] == "" {
		t.Errorf("build row = %v", rows[0])
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
		{"0.0.0.0:3000", "", "", 403, "ADAPTBOT_ADMIN_TOKEN"},
		{"0.0.0.0:3000", "s3cret", "", 403, "Authorization: Bearer"},
		{"0.0.0.0:3000", "s3cret", "Bearer wrong", 403, "Authorization: Bearer"},
		{"0.0.0.0:3000", "s3cret", "Bearer s3cret", 404, "no tool named"},
	}
	for _, tt := range tests {
		s := NewServer(Deps{Config: Config{Addr: tt.addr, AdminToken: tt.token}, Reg: reg, Log: log})
		req := httptest.NewRequest("POST", "/api/tools/nope/run", strings.NewReader(`{}`))
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := s.app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.want || !strings.Contains(string(body), tt.msg) {
			t.Errorf("%s token=%q auth=%q: %d %s", tt.addr, tt.token, tt.auth, resp.StatusCode, body)
		}
	}
}
