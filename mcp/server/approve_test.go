package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/toolbox"
)

// askingCall is a call that asks its door for an approval, as a tool's
// request does on the server (egress, through the service), and answers
// what the person decided, or why nobody could be asked.
func askingCall(ctx context.Context, name string, _ json.RawMessage) (string, error) {
	a := adaptbot.AskerFrom(ctx)
	if a == nil {
		return "nobody to ask", nil
	}
	ans, err := a.Ask(ctx, adaptbot.Approval{ID: "ap-1", Tool: name, Version: 3, Method: "POST",
		URL: "https://hooks.example.org/services/{{secret:HOOK}}", Body: `{"text":"hi"}`, Expires: time.Now().Add(time.Minute)})
	if err != nil {
		return "", err
	}
	return string(ans.Decision), nil
}

// elicitingClient connects a client to srv whose person answers every
// elicitation with action and decision, and records what it was shown.
func elicitingClient(t *testing.T, srv *Server, protocol, action, decision string, shown *[]string) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.sdk.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			*shown = append(*shown, req.Params.Message)
			res := &sdk.ElicitResult{Action: action}
			if action == "accept" {
				res.Content = map[string]any{"decision": decision}
			}
			return res, nil
		},
	})
	cs, err := client.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// protocols are an MCP version asked within a call, and one asked in
// rounds of it (multi round-trip requests).
var protocols = []string{"2025-06-18", multiRoundVersion}

// TestCallsAskByElicitation: a call whose tool's request needs approval
// asks the client's person by elicitation, showing the tool, its version,
// the method, the URL and the body; allow, deny and decline are their
// answers, a dismissal answers nothing (the request is refused). A client
// that cannot elicit gets no Asker: its request is refused.
func TestCallsAskByElicitation(t *testing.T) {
	w := newTestWorld(t)
	srv := New(toolbox.New(w.reg, w.runner), Options{Call: askingCall})
	for _, protocol := range protocols {
		for _, c := range []struct{ action, decision, want string }{
			{"accept", "allow", "allow"},
			{"accept", "deny", "deny"},
			{"decline", "", "deny"},
			{"cancel", "", "dismissed the question without answering"},
		} {
			var shown []string
			cs := elicitingClient(t, srv, protocol, c.action, c.decision, &shown)
			text, _ := callText(t, cs, "calculator", map[string]any{"expression": "1"})
			if !strings.Contains(text, c.want) {
				t.Errorf("%s, %s %s: call = %q, want %q", protocol, c.action, c.decision, text, c.want)
			}
			if len(shown) != 1 || !strings.Contains(shown[0], "calculator (version 3)") ||
				!strings.Contains(shown[0], "POST https://hooks.example.org/services/{{secret:HOOK}}") || !strings.Contains(shown[0], `{"text":"hi"}`) {
				t.Errorf("%s, %s: shown %q", protocol, c.action, shown)
			}
		}
		cs, _ := connectInMemory(t, srv, protocol)
		if text, _ := callText(t, cs, "calculator", map[string]any{"expression": "1"}); text != "nobody to ask" {
			t.Errorf("%s: a client without elicitation: %q", protocol, text)
		}
	}
	srv.parked.mu.Lock()
	defer srv.parked.mu.Unlock()
	if n := len(srv.parked.calls); n != 0 {
		t.Errorf("%d calls still parked after their results", n)
	}
}

// TestForwardedCallsAskTheStdioClient: `adaptbot mcp` beside a server
// passes the server's elicitation on to its stdio client, and the answer
// back.
func TestForwardedCallsAskTheStdioClient(t *testing.T) {
	w := newTestWorld(t)
	srv := New(toolbox.New(w.reg, w.runner), Options{Call: askingCall})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, protocol := range protocols {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		f, err := Dial(ctx, ForwardOptions{URL: hs.URL, Header: http.Header{}})
		if err != nil {
			t.Fatal(err)
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		go func() { f.ServeStdio(ctx, inR, outW); outW.Close() }()
		var shown []string
		client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				shown = append(shown, req.Params.Message)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
			},
		})
		cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := callText(t, cs, "calculator", map[string]any{"expression": "1"}); text != "allow" || len(shown) != 1 {
			t.Errorf("%s: forwarded call = %q, shown %q", protocol, text, shown)
		}
		// A stdio client that cannot elicit is told so (each `adaptbot
		// mcp` serves one client).
		f2, err := Dial(ctx, ForwardOptions{URL: hs.URL, Header: http.Header{}})
		if err != nil {
			t.Fatal(err)
		}
		plain := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
		inR2, inW2 := io.Pipe()
		outR2, outW2 := io.Pipe()
		go func() { f2.ServeStdio(ctx, inR2, outW2); outW2.Close() }()
		cs2, err := plain.Connect(ctx, &sdk.IOTransport{Reader: outR2, Writer: inW2}, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			t.Fatal(err)
		}
		if text, isErr := callText(t, cs2, "calculator", map[string]any{"expression": "1"}); !isErr || !strings.Contains(text, "cannot ask you") {
			t.Errorf("%s: a stdio client without elicitation: %q", protocol, text)
		}
		cs.Close()
		cs2.Close()
		inW.Close()
		inW2.Close()
		f.Close()
		f2.Close()
		cancel()
	}
}
