package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"adaptbot/agent"
	"adaptbot/llm"
	"adaptbot/toolbox"
)

// buildModel asks for a build whatever it is told.
type buildModel struct{}

func (buildModel) Name() string { return "build-model" }

func (buildModel) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Calls: []llm.FunctionCall{{Name: "build_tool", Arguments: []byte(`{"action":"delete","tool":"calculator","summary":"delete it"}`)}}}, nil
}

// countingBuilder counts the builds that started.
type countingBuilder struct{ n *int }

func (b countingBuilder) Build(_ context.Context, req agent.BuildRequest, _ func(agent.BuildStep)) (*agent.BuildResult, error) {
	*b.n++
	return &agent.BuildResult{Action: req.Action, Tool: req.Tool, OK: true, Summary: "Deleted " + req.Tool}, nil
}

// emptyBox is a toolbox without tools.
type emptyBox struct{}

func (emptyBox) Tool(string) (toolbox.Tool, bool) { return nil, false }
func (emptyBox) Serving() []toolbox.Tool          { return nil }
func (emptyBox) Len() int                         { return 0 }

// TestChatBuildNeedsTheAdminToken checks that a build asked for in chat,
// beyond loopback, needs the same admin token as the build API: without it
// the answer is a 403 that says so, and nothing is built.
func TestChatBuildNeedsTheAdminToken(t *testing.T) {
	builds := 0
	a, err := agent.New(agent.Deps{Model: buildModel{}, Tools: emptyBox{}, Builder: countingBuilder{&builds}}, agent.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Deps{Config: Config{Addr: "0.0.0.0:3000", AdminToken: "s3cret"}, Agent: a, Log: slog.New(slog.DiscardHandler)})
	for _, tt := range []struct {
		auth   string
		status int
		want   string
		builds int
	}{
		{"", 403, "admin token", 0},
		{"Bearer wrong", 403, "admin token", 0},
		{"Bearer s3cret", 200, "Deleted calculator", 1},
	} {
		req := httptest.NewRequest("POST", "/chat", strings.NewReader(`{"message": "delete the calculator"}`))
		req.Host = "10.0.0.7:3000" // the server listens on every interface
		req.Header.Set("Content-Type", "application/json")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := s.app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) || !strings.Contains(string(body), "request_id") || builds != tt.builds {
			t.Errorf("auth %q: %d %s, %d builds", tt.auth, resp.StatusCode, body, builds)
		}
	}
}
