package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/client"
	"adaptbot/mcp/config"
	"adaptbot/poll"
	"adaptbot/toolbox"
)

// The tests in this file run AdaptBot itself: the binary built from ../app,
// serving its tools over stdio (`adaptbot mcp`) and over HTTP (/mcp), as
// real clients meet it. ADAPTBOT_BIN names a binary to use instead of
// building one.

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath)) // the adaptbot binary built for the tests
	}
	os.Exit(code)
}

// newHub is a hub for servers, closed when the test ends.
func newHub(t *testing.T, servers []config.Server, opts client.Options) *client.Hub {
	t.Helper()
	h := client.NewHub(servers, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

var (
	buildOnce sync.Once
	binPath   string
	binErr    error
)

// adaptbotBinary builds the app once per test run.
func adaptbotBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ADAPTBOT_BIN"); p != "" {
		return p
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		msg := "go is not on PATH: cannot build adaptbot for this test (or set ADAPTBOT_BIN)"
		if required("ADAPTBOT_REQUIRE_BINARY") {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "adaptbot-mcp-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "adaptbot")
		cmd := exec.Command(goTool, "build", "-o", binPath, "./app")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./app: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// appEnv is a temp AdaptBot home: the built-in tools copied from ../tools
// and a fresh registry, with the in-process sandbox so the test does not
// depend on worker processes.
type appEnv struct {
	dir, tools string
	env        []string
}

func newAppEnv(t *testing.T) *appEnv {
	t.Helper()
	dir := t.TempDir()
	a := &appEnv{dir: dir, tools: filepath.Join(dir, "tools")}
	srcs, err := filepath.Glob(filepath.Join("..", "..", "tools", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		name := filepath.Base(filepath.Dir(src))
		if filepath.Base(src) != name+".go" {
			continue // tests and helpers stay behind
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeTool(t, a.tools, name, string(data))
	}
	a.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"ADAPTBOT_TOOLS_DIR=" + a.tools,
		"ADAPTBOT_REGISTRY=" + filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_BENCHMARKS=" + filepath.Join(dir, "benchmarks.csv"),
		"ADAPTBOT_MCP_CONFIG=" + filepath.Join(dir, "mcp_servers.json"),
		"ADAPTBOT_USERS=" + filepath.Join(dir, "users.json"),
		"ADAPTBOT_SANDBOX=inprocess",
	}
	return a
}

// required reports whether a test must fail rather than skip when what it
// needs is missing: in CI (CI=true), or where the variable named is 1.
func required(env string) bool {
	return os.Getenv("CI") == "true" || os.Getenv(env) == "1"
}

// TestAdaptbotMCPPiped pipes requests into the real `adaptbot mcp` and
// closes its input, as `printf '...' | adaptbot mcp` does: every request
// read is answered before it exits, with status 0.
func TestAdaptbotMCPPiped(t *testing.T) {
	bin := adaptbotBinary(t)
	a := newAppEnv(t)
	writeTool(t, a.tools, "slow", slowSource)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp")
	cmd.Env = a.env
	cmd.Stdin = strings.NewReader(strings.Join(pipedRequests, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("adaptbot mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	checkPipedAnswers(t, stdout.Bytes())
}

func TestAdaptbotMCPStdio(t *testing.T) {
	bin := adaptbotBinary(t)
	a := newAppEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	changed := make(chan struct{}, 16)
	sc := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cmd := exec.Command(bin, "mcp")
	cmd.Env = a.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := sc.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()

	names := toolNames(t, cs)
	for _, want := range []string{"calculator", "current_time", "text_stats", "unit_converter", "weather_forecast"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list = %v, want %s", names, want)
		}
	}
	if text, isErr := callText(t, cs, "calculator", map[string]any{"expression": "2+3"}); isErr || text != "2+3 = 5" {
		t.Errorf("calculator(2+3) = %q, isError %v", text, isErr)
	}
	if text, isErr := callText(t, cs, "calculator", map[string]any{"expr": "2+3"}); !isErr || !strings.Contains(text, "tool calculator: invalid arguments") {
		t.Errorf("calculator with a bad argument = %q, isError %v; want a tool error", text, isErr)
	}

	// Create a tool by hand: the server's watcher picks it up.
	writeTool(t, a.tools, "echo", echoSource("echo", "echoes text."))
	waitChanged(t, changed, "creating tools/echo/echo.go")
	poll.Until(t, "echo in tools/list", func() bool { return slices.Contains(toolNames(t, cs), "echo") })
	if text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"}); isErr || text != "echo: hi" {
		t.Errorf("echo = %q, %v", text, isErr)
	}
	// And delete it.
	if err := os.RemoveAll(filepath.Join(a.tools, "echo")); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, changed, "deleting tools/echo")
	poll.Until(t, "echo to leave tools/list", func() bool { return !slices.Contains(toolNames(t, cs), "echo") })
}

// TestHubWithAdaptbot lists and calls AdaptBot's own stdio server through
// the hub, as one AdaptBot would use another.
func TestHubWithAdaptbot(t *testing.T) {
	bin := adaptbotBinary(t)
	a := newAppEnv(t)
	env := map[string]string{}
	for _, kv := range a.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	h := newHub(t, []config.Server{{Name: "other", Transport: config.TransportStdio, Command: bin, Args: []string{"mcp"}, Env: env}}, client.Options{})
	tools, errs := h.List(context.Background())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(tools) < 5 || tools[0].Server != "other" {
		t.Fatalf("tools = %+v", tools)
	}
	out, err := h.Call(context.Background(), "other", "unit_converter", json.RawMessage(`{"value": 1, "from": "km", "to": "m"}`))
	if err != nil || !strings.Contains(out, "1000") {
		t.Errorf("unit_converter = %q, %v", out, err)
	}
}

// TestAdaptbotMCPOverHTTP serves the app and talks to /mcp through Fiber:
// tools, calls, and list_changed on the standalone stream.
func TestAdaptbotMCPOverHTTP(t *testing.T) {
	bin := adaptbotBinary(t)
	a := newAppEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := startServer(t, ctx, bin, a)

	resp, err := httpPost(base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp == 404 {
		t.Fatal("POST /mcp = 404: the server does not serve MCP over HTTP")
	}

	changed := make(chan string, 8)
	h := newHub(t, []config.Server{{Name: "adaptbot", Transport: config.TransportHTTP, URL: base + "/mcp"}}, client.Options{Timeout: 20 * time.Second})
	h.OnChange(func(s string, _ []toolbox.Spec) { changed <- s })
	tools, errs := h.List(ctx)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(tools) < 5 {
		t.Fatalf("tools = %v", tools)
	}
	<-changed
	out, err := h.Call(ctx, "adaptbot", "calculator", json.RawMessage(`{"expression": "6*7"}`))
	if err != nil || out != "6*7 = 42" {
		t.Errorf("calculator = %q, %v", out, err)
	}
	writeTool(t, a.tools, "echo", echoSource("echo", "echoes text."))
	poll.Until(t, "echo over /mcp after list_changed", func() bool { _, ok := h.Tool("adaptbot", "echo"); return ok })
}

func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// startServer runs `adaptbot serve` on a's folder until the test ends and
// waits until it listens.
func startServer(t *testing.T, ctx context.Context, bin string, a *appEnv) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(a.env, "ADAPTBOT_ADDR=127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer // read only once the process has ended
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cancel(); <-exited })
	addr := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case base := <-addr:
		return base
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("the server exited (%v) before it listened:\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		err := <-exited
		exited <- err
		t.Fatalf("the server did not start within 30s (%v):\n%s", err, stderr.String())
	}
	return ""
}
