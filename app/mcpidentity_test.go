package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyTransport sends whichever key it holds now with each request, as a
// client whose credential changes under an open session would.
type keyTransport struct {
	mu  sync.Mutex
	key string
}

func (k *keyTransport) set(key string) { k.mu.Lock(); k.key = key; k.mu.Unlock() }

func (k *keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	k.mu.Lock()
	key := k.key
	k.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPCallsCarryTheirOwnIdentity: over /mcp each call is its own HTTP
// request's. A builder demoted while their session is open cannot run a
// tool on the next call; someone else's key on that session is refused,
// and runs nothing; every row names the caller. (Before, a call ran with
// the identity of the request that opened the session.)
func TestMCPCallsCarryTheirOwnIdentity(t *testing.T) {
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "s3cret-admin-token"})
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	add := func(name string) (key, pseudonym string) {
		t.Helper()
		code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "builder"}`, admin)
		body := jsonBody(t, raw)
		if code != 201 {
			t.Fatalf("add %s = %d %s", name, code, raw)
		}
		return str(body["key"]), str(body["user"].(map[string]any)["pseudonym"])
	}
	bob, bobP := add("bob")
	carol, _ := add("carol")

	kt := &keyTransport{key: bob}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp", HTTPClient: &http.Client{Transport: kt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() (*sdk.CallToolResult, error) {
		return cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2+3"}})
	}
	if res, err := call(); err != nil || res.IsError {
		t.Fatalf("bob's call as a builder = %+v, %v", res, err)
	}

	// Demoted: the next call on the open session is refused.
	if code, _, raw := in.send(t, "PATCH", "/api/users/bob", `{"role": "user"}`, admin); code != 200 {
		t.Fatalf("demote bob = %d %s", code, raw)
	}
	res, err := call()
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "builder") {
		t.Errorf("a demoted builder's call = %+v, %v; want a refusal naming the builder role", res, err)
	}

	// Someone else's key (a builder's) on bob's session: refused (the SDK
	// answers 403, and the client gives the session up), and nothing runs.
	kt.set(carol)
	if res, err := call(); err == nil && !res.IsError {
		t.Errorf("carol ran a tool on bob's session: %+v", res)
	}

	rows := in.requestRows(t)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	for i, r := range rows {
		if r["user"] != bobP || r["door"] != "mcp" {
			t.Errorf("row %d names %q through %q; want bob (%s) through mcp: %v", i, r["user"], r["door"], bobP, r)
		}
	}
	if ok := rows[0]["tool_execution_success"]; ok != "True" {
		t.Errorf("bob's first call's row = %v", rows[0])
	}
	for _, r := range rows[1:] {
		if r["tool_execution_success"] == "True" {
			t.Errorf("a refused call's row says it ran: %v", r)
		}
	}
}
