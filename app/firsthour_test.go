package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"adaptbot/cli"
	"adaptbot/homelock"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// serveOnce runs `adaptbot serve` with env until it fails or ctx ends,
// and returns its error and what it printed.
func serveOnce(ctx context.Context, env map[string]string) (error, string) {
	var out bytes.Buffer
	err := runWith(ctx, []string{"adaptbot", "serve"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out, testHooks(nil))
	return err, out.String()
}

// TestSecondServerInAFolderIsRefused: while a server runs in a folder, a
// second one started there refuses at once, naming the first one's address,
// and writes nothing; readers (tools list, mcp) still work there.
func TestSecondServerInAFolderIsRefused(t *testing.T) {
	addr := closedAddr(t)
	in := start(t, map[string]string{"ADAPTBOT_ADDR": addr})
	if in.url != "http://"+addr {
		t.Fatalf("first server at %s, want %s", in.url, addr)
	}

	second := make(map[string]string, len(in.env))
	for k, v := range in.env {
		second[k] = v
	}
	second["ADAPTBOT_ADDR"] = "127.0.0.1:0" // another port: the folder is what is shared
	before := tree(t, in.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err, out := serveOnce(ctx, second)
	if _, ok := errors.AsType[*homelock.HeldError](err); !ok {
		t.Fatalf("second server: %v, want it refused\n%s", err, out)
	}
	if !strings.Contains(err.Error(), "http://"+addr) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("refusal %q does not name the first server (pid %d, http://%s)", err, os.Getpid(), addr)
	}
	if strings.Contains(out, "listening") {
		t.Errorf("second server started:\n%s", out)
	}
	if after := tree(t, in.dir); !equalTrees(before, after) {
		t.Error("the refused server changed the folder")
	}

	// Readers take no lock.
	listed, err := runEnv(t, second, nil, "tools", "list", "--server", "local")
	if err != nil || !strings.Contains(listed, "calculator") {
		t.Errorf("tools list beside the server: %v\n%s", err, listed)
	}
	var mcpOut bytes.Buffer
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if err := runWith(t.Context(), []string{"adaptbot", "mcp"}, func(k string) string {
		if k == "ADAPTBOT_HOME" {
			return in.dir
		}
		return second[k]
	}, strings.NewReader(req), &mcpOut, io.Discard, testHooks(nil)); err != nil || !strings.Contains(mcpOut.String(), `"id":1`) {
		t.Errorf("mcp beside the server: %v\n%s", err, mcpOut.String())
	}

	// Once the first stops, the folder is free.
	in.stop()
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err2 error
	var out2 string
	go func() { err2, out2 = serveOnce(ctx2, second); close(done) }()
	poll.Until(t, "a server after the first stopped", func() bool {
		h, held, _ := homelock.Read(in.dir)
		return held && h.PID == os.Getpid()
	})
	cancel2()
	<-done
	if err2 != nil {
		t.Errorf("server after the first stopped: %v\n%s", err2, out2)
	}
}

// TestBusyPortSaysWhichSetting: a port another program holds is refused
// with the setting that changes it.
func TestBusyPortSaysWhichSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err, out := serveOnce(ctx, env)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("serve on a busy port: %v\n%s", err, out)
	}
	var next int
	fmt.Sscan(port, &next)
	want := fmt.Sprintf("ADAPTBOT_ADDR=127.0.0.1:%d", next+1)
	if !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), want) {
		t.Errorf("busy port: %q, want it to say the port is in use and suggest %s", err, want)
	}
	// The folder is free again for the next try.
	if _, held, _ := homelock.Read(filepath.Dir(env["ADAPTBOT_REGISTRY"])); held {
		t.Error("the folder is still locked after the server gave up")
	}
}

// TestMCPValidate: the MCP servers file is optional, and when there is one
// every problem is named with where it is.
func TestMCPValidate(t *testing.T) {
	dir := t.TempDir()
	env := cliEnv(dir, closedAddr(t))
	env["ADAPTBOT_MCP_CONFIG"] = filepath.Join(dir, "mcp_servers.json")

	// A fresh clone: no file is no servers, and it says how to add one.
	out, err := runEnv(t, env, nil, "mcp", "validate")
	if err != nil || !strings.Contains(out, "optional") || !strings.Contains(out, `"mcpServers"`) || !strings.Contains(out, `"command"`) {
		t.Errorf("validate without the file: %v\n%s", err, out)
	}
	// A file named with -c must exist.
	out, err = runEnv(t, env, nil, "mcp", "validate", "-c", filepath.Join(dir, "other.json"))
	if cli.ExitCode(err, io.Discard) != 1 || !strings.Contains(err.Error(), "other.json does not exist") {
		t.Errorf("validate -c of a missing file: %v\n%s", err, out)
	}

	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(env["ADAPTBOT_MCP_CONFIG"], []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"mcpServers": {"files": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]}, "weather": {"url": "http://localhost:8000/mcp"}}}`)
	out, err = runEnv(t, env, nil, "mcp", "validate")
	if err != nil || !strings.Contains(out, "valid, 2 servers") || !strings.Contains(out, "files") || !strings.Contains(out, "http://localhost:8000/mcp") {
		t.Errorf("validate a good file: %v\n%s", err, out)
	}

	write(`{"mcpServers": {"bad": {"url": "ftp://x"}, "nothing": {}}}`)
	out, err = runEnv(t, env, nil, "mcp", "validate")
	if cli.ExitCode(err, io.Discard) != 1 {
		t.Errorf("validate a bad file: exit %d, want 1", cli.ExitCode(err, io.Discard))
	}
	for _, want := range []string{"2 problems", "mcpServers.bad.url", "mcpServers.nothing", `needs "command"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate a bad file: %v lacks %q", err, want)
		}
	}

	// --connect starts each server: one that cannot start is named.
	write(`{"mcpServers": {"gone": {"command": "` + filepath.Join(dir, "no-such-server") + `"}}}`)
	out, err = runEnv(t, env, nil, "mcp", "validate", "--connect", "--timeout", "10s")
	if cli.ExitCode(err, io.Discard) != 1 || !strings.Contains(out, "gone") || !strings.Contains(out, "FAILED") {
		t.Errorf("validate --connect with a server that cannot start: %v\n%s", err, out)
	}
}

// TestSearch: search finds AdaptBot's tools by substring, regex and
// keywords, in text and JSON, and says when nothing matches.
func TestSearch(t *testing.T) {
	in := start(t, nil)
	env := cliEnv(in.dir, serverAddr(t, in))
	search := func(args ...string) string {
		t.Helper()
		out, err := runEnv(t, env, nil, append([]string{"search"}, args...)...)
		if err != nil {
			t.Fatalf("search %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := search("arithmetic"); !strings.Contains(out, "calculator [local") || strings.Contains(out, "unit_converter") {
		t.Errorf("search arithmetic:\n%s", out)
	}
	var hits []struct{ Server, Name string }
	if err := json.Unmarshal([]byte(search("--mode", "regex", "--format", "json", "^unit_")), &hits); err != nil || len(hits) != 1 || hits[0].Name != "unit_converter" || hits[0].Server != "local" {
		t.Errorf("search --mode regex ^unit_ = %+v, %v", hits, err)
	}
	if out := search("--limit", "1", "e"); strings.Count(out, "[local") != 1 {
		t.Errorf("search --limit 1 e:\n%s", out)
	}
	if out := search("no-tool-does-this"); !strings.Contains(out, "no tools match") {
		t.Errorf("search with no match:\n%s", out)
	}
	// No query is a usage error, not a list of everything.
	_, err := runEnv(t, env, nil, "search")
	if cli.ExitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), "QUERY") {
		t.Errorf("search without a query: %v", err)
	}
}

// TestToolsModifyAndApproveThroughTheServer: tools modify sends the change
// to the running server, which serves it as a new version; with review on,
// tools approve makes a waiting version serve.
func TestToolsModifyAndApproveThroughTheServer(t *testing.T) {
	script := romanScript(t)
	ranged := strings.Replace(romanTool, "writes a whole number in Roman numerals.", "writes a whole number from 1 to 3999 in Roman numerals.", 1)
	modArgs, _ := json.Marshal(map[string]any{
		"source": ranged, "description": "Writes a whole number from 1 to 3999 in Roman numerals.", "category": "text",
		"examples": []map[string]any{{"input": map[string]any{"number": 4}, "contains": "IV"}, {"input": map[string]any{"number": 9}, "contains": "IX"}},
	})
	llmSrv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if r.Forced() == "write_tool" && strings.Contains(strings.ToLower(str(r.Messages)), "say its range") {
			return llmtest.Call("write_tool", string(modArgs))
		}
		return script(r)
	})
	env := modelEnv(llmSrv)
	env["ADAPTBOT_REVIEW"] = "on"
	in := start(t, env)
	cmdEnv := cliEnv(in.dir, serverAddr(t, in))
	run := func(args ...string) (string, error) { return runEnv(t, cmdEnv, nil, args...) }

	// A build under review waits; approve serves it.
	if out, err := run("tools", "create", "a tool that converts numbers to roman numerals"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	if _, r := in.do(t, "GET", "/api/tools/roman_numerals", ""); r["status"] != "pending" {
		t.Fatalf("a new tool under review = %v, want pending", r)
	}
	if out, err := run("tools", "approve", "roman_numerals"); err != nil || !strings.Contains(out, "roman_numerals approved") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	waitTool(t, in, "roman_numerals")

	// Modify: a second version, pending while version 1 serves.
	out, err := run("tools", "modify", "roman_numerals", "say its range in the description")
	if err != nil {
		t.Fatalf("modify: %v\n%s", err, out)
	}
	_, r := in.do(t, "GET", "/api/tools/roman_numerals", "")
	if r["version"] != float64(1) || r["pending_version"] != float64(2) || strings.Contains(str(r["description"]), "3999") {
		t.Errorf("after modify under review: %v", r)
	}
	if out, err := run("tools", "approve", "roman_numerals", "--format", "json"); err != nil || !strings.Contains(out, `"version": 2`) {
		t.Fatalf("approve the change: %v\n%s", err, out)
	}
	_, r = in.do(t, "GET", "/api/tools/roman_numerals", "")
	if r["version"] != float64(2) || r["status"] != "ok" || !strings.Contains(str(r["description"]), "from 1 to 3999") {
		t.Errorf("after approving the change: %v", r)
	}
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number": 2026}`); code != 200 || r["output"] != "MMXXVI" {
		t.Errorf("run version 2 = %d %v", code, r)
	}
	// Nothing waits now: approve says so and fails.
	if out, err := run("tools", "approve", "roman_numerals"); err == nil || cli.ExitCode(err, io.Discard) != 1 {
		t.Errorf("approve with nothing waiting: %v\n%s", err, out)
	}
	var cats []string
	for _, row := range in.rows(t) {
		cats = append(cats, row["category"]+":"+row["door"]+":"+row["error_kind"])
	}
	want := "build_create:cli:,build_approve:cli:,build_modify:cli:,build_approve:cli:,roman_numerals:http:,build_approve:cli:conflict"
	if got := strings.Join(cats, ","); got != want {
		t.Errorf("CSV rows = %s; want the server's row for each request (category:door:error_kind): %s", got, want)
	}
}

// TestNotConfiguredIsItsOwnOutcome: on a fresh install without a model,
// refused chats are counted apart from errors, and each door filters them.
func TestNotConfiguredIsItsOwnOutcome(t *testing.T) {
	in := start(t, nil)
	for range 3 {
		if code, r := in.chat(t, "hello"); code != 503 {
			t.Fatalf("chat without a model = %d %v", code, r)
		}
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "1/0"}`); code != 422 {
		t.Fatalf("a failing run = %d %v", code, r)
	}
	poll.Until(t, "four rows", func() bool { return len(in.rows(t)) == 4 })

	sum := summary(t, in, "")
	if sum["requests"] != float64(4) || sum["errors"] != float64(1) || sum["not_configured"] != float64(3) {
		t.Errorf("summary: requests %v, errors %v, not configured %v; want 4, 1, 3", sum["requests"], sum["errors"], sum["not_configured"])
	}
	if s := summary(t, in, "?outcome=not_configured"); s["requests"] != float64(3) {
		t.Errorf("?outcome=not_configured selects %v requests, want 3", s["requests"])
	}
	if s := summary(t, in, "?outcome=error"); s["requests"] != float64(1) {
		t.Errorf("?outcome=error selects %v requests, want 1", s["requests"])
	}
	if code, page := in.raw(t, "GET", "/dashboard?outcome=not_configured", ""); code != 200 || !strings.Contains(string(page), `<option value="not_configured" selected>`) {
		t.Errorf("dashboard with outcome=not_configured = %d", code)
	}
	env := cliEnv(in.dir, serverAddr(t, in))
	env["ADAPTBOT_BENCHMARKS"] = in.env["ADAPTBOT_BENCHMARKS"]
	out, err := runEnv(t, env, nil, "report", "--outcome", "not_configured", "--format", "json")
	var rep map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep["requests"] != float64(3) || rep["errors"] != float64(0) {
		t.Errorf("report --outcome not_configured: %v\n%s", err, out)
	}
	if out, err := runEnv(t, env, nil, "report"); err != nil || !strings.Contains(out, "errors 1; not configured 3") {
		t.Errorf("report: %v\n%s", err, out)
	}
}
