package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"adaptbot/toolbox"
)

// pipedRequests are what `printf ... | adaptbot mcp` sends: the handshake,
// a list, a call that answers at once, a call that runs until its tool's
// time limit (200ms) ends it, and a ping; then the end of input.
var pipedRequests = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"2+3*4"}}}`,
	`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
}

// answers decodes the JSON-RPC responses in out by ID, failing on anything
// that is not one line of JSON.
func answers(t *testing.T, out []byte) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line is not JSON: %v: %s", err, sc.Text())
		}
		if id, ok := m["id"]; ok {
			b, _ := json.Marshal(id)
			got[string(b)] = m
		}
	}
	return got
}

// checkPipedAnswers checks that every request of pipedRequests got its
// answer.
func checkPipedAnswers(t *testing.T, out []byte) {
	t.Helper()
	got := answers(t, out)
	for _, id := range []string{"1", "2", "3", `"slow"`, "5"} {
		if got[id] == nil {
			t.Errorf("no answer to request %s; output:\n%s", id, out)
		} else if got[id]["error"] != nil {
			t.Errorf("request %s: %v", id, got[id]["error"])
		}
	}
	if t.Failed() {
		return
	}
	if s := mustJSON(got["2"]["result"]); !strings.Contains(s, `"calculator"`) {
		t.Errorf("tools/list = %s, want the calculator", s)
	}
	if s := mustJSON(got["3"]["result"]); !strings.Contains(s, "2+3*4 = 14") {
		t.Errorf("calculator = %s, want 2+3*4 = 14", s)
	}
	// The slow tool's own limit ends it: a tool error, answered, not dropped.
	if s := mustJSON(got[`"slow"`]["result"]); !strings.Contains(s, `"isError":true`) || !strings.Contains(s, "time limit") {
		t.Errorf("slow = %s, want a tool error saying it ran past its time limit", s)
	}
}

// TestServeStdioAnswersPipedInput closes the input right after the
// requests, as a pipe does: every request read is answered before
// ServeStdio returns, including a call still running at the end of input.
func TestServeStdioAnswersPipedInput(t *testing.T) {
	w := newTestWorld(t)
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	in := strings.NewReader(strings.Join(pipedRequests, "\n") + "\n")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.ServeStdio(ctx, in, &out); err != nil {
		t.Fatal(err)
	}
	checkPipedAnswers(t, out.Bytes())
}

// TestServeStdioEndsWithItsInput: with nothing pending, the end of input
// ends the session at once.
func TestServeStdioEndsWithItsInput(t *testing.T) {
	w := newTestWorld(t)
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() { done <- srv.ServeStdio(context.Background(), pr, &out) }()
	pw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the end of its input")
	}
	if out.Len() != 0 {
		t.Errorf("output without requests: %q", out.String())
	}
}
