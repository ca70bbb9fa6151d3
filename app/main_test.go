package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm/llmtest"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// TestMain lets the test binary serve as the sandbox worker, as the real
// binary does: the sandbox starts workers as this executable with
// `worker`, and its pipes.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == "worker" && startedAsWorker() {
		if err := sandbox.ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testHooks rewrites the toolkit's hosts as rewrite says. The sandbox's
// workers are the test binary, as they are the real one (TestMain).
func testHooks(rewrite map[string]string) hooks {
	return hooks{toolkitHosts: rewrite}
}

// instance is AdaptBot started through run(), as `go run ./app` starts it.
type instance struct {
	url   string
	dir   string
	env   map[string]string
	out   *syncBuffer
	log   *syncBuffer // the server's log: what it writes to stderr
	stop  func()
	ended chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// copyTools copies the shipped tools' sources (not their tests) into dir.
func copyTools(t *testing.T, dir string) {
	t.Helper()
	srcs, err := filepath.Glob("../tools/*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		name := filepath.Base(filepath.Dir(src))
		if filepath.Base(src) != name+".go" {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeTool(t, dir, name, string(b))
	}
}

func writeTool(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
		t.Fatal(err)
	}
	// Write then rename, as editors do, so the watcher never sees half a file.
	tmp := filepath.Join(dir, "tools", name, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "tools", name, name+".go")); err != nil {
		t.Fatal(err)
	}
}

// start runs AdaptBot over a temp directory holding the shipped tools, with
// env on top of the test defaults, and waits until /healthz answers.
func start(t *testing.T, env map[string]string, prepare ...func(dir string)) *instance {
	t.Helper()
	return startWith(t, env, testHooks(nil), prepare...)
}

// startWith is start with hooks.
func startWith(t *testing.T, env map[string]string, h hooks, prepare ...func(dir string)) *instance {
	t.Helper()
	dir := t.TempDir()
	copyTools(t, dir)
	for _, p := range prepare {
		p(dir)
	}
	full := map[string]string{
		"ADAPTBOT_ADDR":         "127.0.0.1:0",
		"ADAPTBOT_TOOLS_DIR":    filepath.Join(dir, "tools"),
		"ADAPTBOT_REGISTRY":     filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_BENCHMARKS":   filepath.Join(dir, "benchmarks", "benchmarks.csv"),
		"ADAPTBOT_USERS":        filepath.Join(dir, "users.json"),
		"ADAPTBOT_WORKERS":      "2",
		"ADAPTBOT_TOOL_TIMEOUT": "5s",
	}
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{dir: dir, env: full, out: &syncBuffer{}, log: &syncBuffer{}, ended: make(chan error, 1)}
	in.stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-in.ended:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("server did not stop within 20s")
		}
	})
	t.Cleanup(in.stop)
	stderr := in.log
	go func() {
		in.ended <- runWith(ctx, []string{"adaptbot"}, func(k string) string { return full[k] }, strings.NewReader(""), in.out, stderr, h)
	}()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for in.url == "" {
		if m := re.FindStringSubmatch(in.out.String()); m != nil {
			in.url = m[1]
			break
		}
		select {
		case err := <-in.ended:
			t.Fatalf("server exited: %v\nstdout: %s\nstderr: %s", err, in.out, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start\nstdout: %s\nstderr: %s", in.out, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := in.do(t, "GET", "/healthz", ""); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	return in
}

// do sends a request and decodes a JSON reply into a map.
func (in *instance) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	code, raw := in.raw(t, method, path, body)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: reply is not JSON: %v: %s", method, path, err, raw)
		}
	}
	return code, out
}

func (in *instance) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (in *instance) chat(t *testing.T, message string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"message": message})
	return in.do(t, "POST", "/chat", string(b))
}

// rows reads the benchmark CSV's data rows as maps by column.
func (in *instance) rows(t *testing.T) []map[string]string {
	t.Helper()
	f, err := os.Open(in.env["ADAPTBOT_BENCHMARKS"])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := readCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// requestRows are rows without the users API's (intent MANAGE), which a
// test's set-up of its people writes.
func (in *instance) requestRows(t *testing.T) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, r := range in.rows(t) {
		if r["intent"] != adaptbot.IntentManage {
			out = append(out, r)
		}
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The kinds of request the chat flow sends a model, all in one conversation:
// the synthesizer's ends with a tool's result (not request_tools'); the
// classifier's is any other that offers need_tool and forces nothing; a
// retry of invalid arguments forces the tool.
func isSynthesizer(r llmtest.Request) bool {
	res := r.Results()
	return r.Forced() == "" && r.Last().Role == "tool" && len(res) > 0 && res[len(res)-1].Name != "request_tools"
}
func isClassifier(r llmtest.Request) bool {
	return r.Schema("need_tool") != nil && r.Forced() == "" && !isSynthesizer(r)
}

// lastOutput is the last tool output a synthesizer request shows.
func lastOutput(r llmtest.Request) string {
	res := r.Results()
	if len(res) == 0 {
		return ""
	}
	return strings.TrimSpace(res[len(res)-1].Text)
}

// ranTool reports whether r holds a result of the named function's call.
func ranTool(r llmtest.Request, function string) bool {
	for _, res := range r.Results() {
		if res.Name == function {
			return true
		}
	}
	return false
}

// scriptedModel answers like a model that routes by keywords in the message:
// what each test needs, scripted per kind of request.
type scriptedModel struct {
	mu    sync.Mutex
	route map[string]string // message → decision: general, need_tool or a tool
	args  map[string]string // message → arguments (or a sequence separated by "\n---\n")
	calls map[string]int
}

func (m *scriptedModel) reply(r llmtest.Request) llmtest.Reply {
	// The message is the first user message: later ones carry validation
	// errors, discovery replies or tool results.
	msg := ""
	for _, um := range r.Messages {
		if um.Role == "user" {
			msg = um.Text()
			break
		}
	}
	switch {
	case isSynthesizer(r):
		return llmtest.Say("Here you go: " + lastOutput(r))
	case isClassifier(r):
		m.mu.Lock()
		d, ok := m.route[msg]
		m.mu.Unlock()
		switch {
		case !ok || d == "general":
			return llmtest.Say("Hello! I am a scripted model.")
		case d == "need_tool":
			return llmtest.Call("need_tool", `{"capability":"scripted"}`)
		}
		return llmtest.Call(toolbox.FunctionName(d), m.nextArgs(msg))
	default:
		// A retry of arguments that failed validation.
		return llmtest.Call(r.Forced(), m.nextArgs(msg))
	}
}

// nextArgs returns the next arguments scripted for msg; the last repeats.
func (m *scriptedModel) nextArgs(msg string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seq := strings.Split(m.args[msg], "\n---\n")
	n := m.calls[msg]
	m.calls[msg]++
	if n >= len(seq) {
		n = len(seq) - 1
	}
	return seq[n]
}

func newScript(route, args map[string]string) *scriptedModel {
	return &scriptedModel{route: route, args: args, calls: map[string]int{}}
}

func modelEnv(srv *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_BASE_URL": srv.BaseURL(), "OPENAI_API_KEY": "test", "ADAPTBOT_MODEL": "scripted"}
}
