package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/agent"
	"adaptbot/config"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/toolbox"
	"adaptbot/web"
)

// buildModel asks for a build whatever it is told.
type buildModel struct{}

func (buildModel) Name() string { return "build-model" }

func (buildModel) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Calls: []llm.FunctionCall{{Name: "build_tool", Arguments: []byte(`{"action":"delete","tool":"calculator","summary":"delete it"}`)}}}, nil
}

// TestChatBuildNeedsTheAdminToken checks that a delete asked for in chat,
// beyond loopback, needs the admin role, as the API's does: nobody signed
// in gets 401, a builder a 403 that says why, and the tool stays; with the
// admin token, the tool goes. The chat goes through the real service and
// generator.
func TestChatBuildNeedsTheAdminToken(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	log := slog.New(slog.DiscardHandler)
	runner, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess})
	if err != nil {
		t.Fatal(err)
	}
	defer runner.Close()
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "r.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(reg, runner)
	a, err := agent.New(agent.Deps{Model: buildModel{}, Tools: box}, agent.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := generator.New(generator.Options{Model: buildModel{}, Registry: reg, Runner: runner, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	svc := service.New(service.Deps{Agent: a, Tools: box, Registry: reg, Generator: gen, Log: log})
	cfg := config.Config{Addr: "0.0.0.0:3000", AdminToken: "s3cret-admin-token"}
	ae, people := testUsers(t, cfg)
	_, builderKey, err := people.Add(context.Background(), "bob", identity.Builder)
	if err != nil {
		t.Fatal(err)
	}
	s := web.NewServer(svc, ae, nil, edgeOptions(cfg, log))
	client := listening(t, s)
	for _, tt := range []struct {
		auth   string
		status int
		want   string
		stays  bool
	}{
		{"", 401, "sign in", true},
		{"Bearer wrong", 401, "not valid", true},
		{"Bearer " + builderKey, 403, "needs the admin role", true},
		{"Bearer s3cret-admin-token", 200, "calculator", false},
	} {
		req := httptest.NewRequest("POST", "/chat", strings.NewReader(`{"message": "delete the calculator"}`))
		req.Host = "10.0.0.7:3000" // the server listens on every interface
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := client.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_, stays := reg.Entry("calculator")
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) || (tt.status != 401 && !strings.Contains(string(body), "request_id")) || stays != tt.stays {
			t.Errorf("auth %q: %d %s; calculator still there: %v", tt.auth, resp.StatusCode, body, stays)
		}
	}
}
