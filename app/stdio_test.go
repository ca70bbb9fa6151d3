package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/config"
	"adaptbot/homelock"
	"adaptbot/identity/users"
	"adaptbot/traces"
)

// stdioMCP runs `adaptbot mcp` with env in this process, as an MCP client
// starts it, and connects an MCP client to its standard streams. stop ends
// the client's session (closing the command's input) and returns the
// command's error.
func stdioMCP(t *testing.T, env map[string]string) (cs *sdk.ClientSession, stop func() error, stderr *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := runWith(context.Background(), []string{"adaptbot", "mcp"}, func(k string) string { return env[k] }, inR, outW, stderr, testHooks(nil))
		outW.Close()
		done <- err
	}()
	wait := func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatalf("adaptbot mcp did not end when its input did\nstderr: %s", stderr)
			return nil
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		t.Fatalf("connect to adaptbot mcp: %v (it returned %v)\nstderr: %s", err, wait(), stderr)
	}
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cs.Close()
		inW.Close()
		return wait()
	}
	t.Cleanup(func() { stop() })
	return cs, stop, stderr
}

// callTool calls a tool over cs and returns its text and whether it is an
// error result.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}

// csvRows reads the benchmark CSV at path.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestStdioMCPWithoutServerIsTheFoldersWriter: with no server running,
// `adaptbot mcp` holds the folder and carries each call out through the
// service: exactly one row per call, through the door mcp, as the local
// user (the pseudonym the server gives them), a trace per row, and a
// failure case for the call that failed. A server, or a second `adaptbot
// mcp`, started in the folder meanwhile is refused with a message naming
// it; the folder is free again once the client leaves.
func TestStdioMCPWithoutServerIsTheFoldersWriter(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, closedAddr(t))
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cs, stop, stderr := stdioMCP(t, env)

	if text, isErr := callTool(t, cs, "calculator", map[string]any{"expression": "2+3"}); isErr || text != "2+3 = 5" {
		t.Errorf("calculator(2+3) = %q, isError %v", text, isErr)
	}
	if text, isErr := callTool(t, cs, "calculator", map[string]any{"expression": "2+"}); !isErr {
		t.Errorf("calculator(2+) = %q, want an error result", text)
	}

	h, held, err := homelock.Read(dir)
	if err != nil || !held || h.Command != "mcp" || h.PID != os.Getpid() {
		t.Errorf("while serving, the folder's lock = %+v, held %v, %v; want held by adaptbot mcp", h, held, err)
	}
	serveEnv := map[string]string{}
	for k, v := range env {
		serveEnv[k] = v
	}
	serveEnv["ADAPTBOT_ADDR"] = "127.0.0.1:0"
	if _, err := runEnv(t, serveEnv, nil, "serve"); err == nil || !strings.Contains(err.Error(), "adaptbot mcp (pid") {
		t.Errorf("a server beside adaptbot mcp: %v; want it refused, naming adaptbot mcp", err)
	}
	if _, err := runEnv(t, env, strings.NewReader(""), "mcp"); err == nil || !strings.Contains(err.Error(), "no AdaptBot server answers") || !strings.Contains(err.Error(), "adaptbot mcp (pid") {
		t.Errorf("a second adaptbot mcp: %v; want it refused, saying no server answers and who holds the folder", err)
	}

	if err := stop(); err != nil {
		t.Errorf("adaptbot mcp: %v\nstderr: %s", err, stderr)
	}
	if _, held, _ := homelock.Read(dir); held {
		t.Error("the folder is still held after the client left")
	}

	b, err := users.OpenFile(cfg.Identity.Users)
	if err != nil {
		t.Fatal(err)
	}
	store, err := users.Open(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	local := store.Pseudonym("local")
	b.Close()
	rows := csvRows(t, cfg.Benchmarks)
	if len(rows) != 2 {
		t.Fatalf("%d rows for 2 calls, want one each: %v", len(rows), rows)
	}
	st, err := traces.Open(cfg.Traces, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, r := range rows {
		if r["door"] != "mcp" || r["user"] != local || r["category"] != "calculator" {
			t.Errorf("row %d: door %q, user %q, category %q; want mcp, the local user (%s), calculator", i, r["door"], r["user"], r["category"], local)
		}
		if rec, err := st.Get(r["request_id"]); err != nil || rec.Tool != "calculator" || rec.User != local {
			t.Errorf("row %d's trace = %+v, %v", i, rec, err)
		}
	}
	failed := rows[1]["request_id"]
	cases, _ := filepath.Glob(filepath.Join(cfg.ToolsDir, ".failures", "*"))
	var found bool
	for _, c := range cases {
		data, _ := os.ReadFile(c)
		found = found || strings.Contains(string(data), failed)
	}
	if !found {
		t.Errorf("no failure case names the failed call %s (in %v)", failed, cases)
	}
}

// TestStdioMCPForwardsToTheServerAsTheKeysUser: with a server running,
// `adaptbot mcp` started anywhere forwards each call to the server's /mcp
// with ADAPTBOT_KEY: the server writes the row and the trace, as the key's
// user, and refuses what their role does not allow. The folder the
// command was started in is left alone; a key the server refuses stops it
// with a message that says so.
func TestStdioMCPForwardsToTheServerAsTheKeysUser(t *testing.T) {
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "s3cret-admin-token"})
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	add := func(name, role string) (key, pseudonym string) {
		t.Helper()
		code, _, raw := in.send(t, "POST", "/api/users", `{"name": "`+name+`", "role": "`+role+`"}`, admin)
		body := jsonBody(t, raw)
		if code != 201 {
			t.Fatalf("add %s = %d %s", name, code, raw)
		}
		return str(body["key"]), str(body["user"].(map[string]any)["pseudonym"])
	}
	bob, bobP := add("bob", "builder")
	dan, danP := add("dan", "user")

	elsewhere := t.TempDir()
	env := cliEnv(elsewhere, strings.TrimPrefix(in.url, "http://"))
	env["ADAPTBOT_KEY"] = bob
	cs, stop, stderr := stdioMCP(t, env)
	if text, isErr := callTool(t, cs, "calculator", map[string]any{"expression": "2+3"}); isErr || text != "2+3 = 5" {
		t.Errorf("calculator(2+3) through the server = %q, isError %v", text, isErr)
	}
	if err := stop(); err != nil {
		t.Errorf("adaptbot mcp: %v\nstderr: %s", err, stderr)
	}
	rows := in.requestRows(t)
	if len(rows) != 1 || rows[0]["door"] != "mcp" || rows[0]["user"] != bobP || rows[0]["tool_execution_success"] != "True" {
		t.Fatalf("the server's rows = %v; want one, through mcp, as bob (%s)", rows, bobP)
	}
	code, _, raw := in.send(t, "GET", "/api/requests/"+rows[0]["request_id"], "", map[string]string{"Authorization": "Bearer " + bob})
	if code != 200 || !strings.Contains(string(raw), "calculator") {
		t.Errorf("bob's trace of the call = %d %s", code, raw)
	}

	env["ADAPTBOT_KEY"] = dan
	cs, stop, _ = stdioMCP(t, env)
	if text, isErr := callTool(t, cs, "calculator", map[string]any{"expression": "2+3"}); !isErr || !strings.Contains(text, "builder") {
		t.Errorf("a user's call = %q, isError %v; want a refusal naming the builder role", text, isErr)
	}
	stop()
	rows = in.requestRows(t)
	if len(rows) != 2 || rows[1]["user"] != danP || rows[1]["door"] != "mcp" || rows[1]["error_kind"] != "forbidden" {
		t.Errorf("the refused call's row = %v; want dan's (%s), through mcp, forbidden", rows[1:], danP)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("forwarding wrote %d entries where it was started", len(entries))
	}

	env["ADAPTBOT_KEY"] = "adaptbot_not-a-key"
	_, err := runEnv(t, env, strings.NewReader(""), "mcp")
	if err == nil || !strings.Contains(err.Error(), in.url) || !strings.Contains(err.Error(), "ADAPTBOT_KEY") {
		t.Errorf("a bad key: %v; want a refusal naming the server and ADAPTBOT_KEY", err)
	}
	t.Logf("a bad key: %v", err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("a bad key waited for the dial's time limit")
	}
}
