package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// send sends a request with the given headers (a "Host" entry sets the
// Host header) and returns the status, the response headers and the body.
func (in *instance) send(t *testing.T, method, path, body string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

func jsonBody(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("reply is not JSON: %v: %s", err, raw)
	}
	return m
}

// deleteScript is a model that reads "delete the calculator tool" as a
// request to delete it, and anything else as chat.
func deleteScript(r llmtest.Request) llmtest.Reply {
	if isClassifier(r) && strings.HasPrefix(r.LastUser(), "delete") {
		return llmtest.Call("build_tool", `{"action":"delete","tool":"calculator","summary":"Remove the calculator."}`)
	}
	return llmtest.Say("Hello! I am a scripted model.")
}

// TestChatDeleteNeedsTheAdminRole: chat is no door around the roles. Beyond
// loopback, a person with the user role whose chat message would delete a
// tool is refused with 403 and a reply saying so, and nothing is deleted;
// the admin token deletes; plain chat needs only the user role.
func TestChatDeleteNeedsTheAdminRole(t *testing.T) {
	llmSrv := llmtest.New(t, deleteScript)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	env["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token"
	in := start(t, env)
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	code, _, raw := in.send(t, "POST", "/api/users", `{"name":"carol","role":"user"}`, admin)
	carolKey := str(jsonBody(t, raw)["key"])
	if code != 201 && code != 200 || carolKey == "" {
		t.Fatalf("add carol = %d %s", code, raw)
	}
	carol := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + carolKey}
	msg := `{"message":"delete the calculator tool"}`

	code, _, raw = in.send(t, "POST", "/chat", msg, carol)
	r := jsonBody(t, raw)
	if code != 403 || !strings.Contains(str(r["error"]), "admin role") || !strings.Contains(str(r["response"]), "admin role") || r["request_id"] == "" {
		t.Errorf("carol's chat delete = %d %s", code, raw)
	}
	streamed := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + carolKey, "Accept": "text/event-stream"}
	code, _, raw = in.send(t, "POST", "/chat", msg, streamed)
	if code != 200 || !strings.Contains(string(raw), "event: error") || !strings.Contains(string(raw), `"status":403`) {
		t.Errorf("carol's streamed chat delete = %d %s", code, raw)
	}
	code, _, raw = in.send(t, "GET", "/api/tools/calculator", "", carol)
	if r := jsonBody(t, raw); code != 200 || r["serving"] != true {
		t.Fatalf("calculator after refused deletes = %d %s", code, raw)
	}
	code, _, raw = in.send(t, "POST", "/chat", `{"message":"hello"}`, carol)
	if code != 200 || jsonBody(t, raw)["path"] != "general" {
		t.Errorf("carol's plain chat = %d %s", code, raw)
	}
	if code, _, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, map[string]string{"Content-Type": "application/json"}); code != 401 {
		t.Errorf("anonymous chat beyond loopback = %d %s, want 401", code, raw)
	}

	code, _, raw = in.send(t, "POST", "/chat", msg, admin)
	r = jsonBody(t, raw)
	if build, _ := r["tool_build"].(map[string]any); code != 200 || build["ok"] != true || build["action"] != "delete" {
		t.Fatalf("chat delete with the token = %d %s", code, raw)
	}
	if code, _, _ := in.send(t, "GET", "/api/tools/calculator", "", admin); code != 404 {
		t.Errorf("calculator after an authorized delete = %d", code)
	}
}

// TestCrossSite drives a loopback server the way another site's page, or a
// rebound DNS name, would: text/plain bodies, a foreign Origin, a foreign
// Host. None reaches a handler; the page sends its security headers.
func TestCrossSite(t *testing.T) {
	in := start(t, nil)
	paths := []string{"/api/tools/calculator/run", "/api/tools/calculator/rollback", "/api/tools/build", "/chat",
		"/api/tools/plan", "/api/tools/calculator/approve", "/api/tools/calculator/test"}
	evil := "http://evil.example"
	for _, p := range paths {
		body := `{"expression":"1+1","version":1,"request":"make a tool","message":"delete the calculator tool"}`
		for _, tt := range []struct {
			name    string
			headers map[string]string
			want    int
		}{
			{"text/plain from another site", map[string]string{"Content-Type": "text/plain", "Origin": evil}, 403},
			{"text/plain, no Origin", map[string]string{"Content-Type": "text/plain"}, 415},
			{"form, no Origin", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
			{"JSON from another site", map[string]string{"Content-Type": "application/json", "Origin": evil}, 403},
			{"Origin null", map[string]string{"Content-Type": "application/json", "Origin": "null"}, 403},
			{"foreign Host", map[string]string{"Content-Type": "application/json", "Host": "evil.example:3000"}, 421},
			{"rebound name", map[string]string{"Content-Type": "application/json", "Host": "attacker.example", "Origin": "http://attacker.example"}, 421},
		} {
			code, _, raw := in.send(t, "POST", p, body, tt.headers)
			if code != tt.want || !strings.Contains(string(raw), `"error"`) {
				t.Errorf("%s to %s = %d %s; want %d", tt.name, p, code, raw, tt.want)
			}
		}
	}
	if rows, err := os.ReadFile(in.env["ADAPTBOT_BENCHMARKS"]); err == nil && strings.Count(string(rows), "\n") > 1 {
		t.Errorf("refused requests reached the handlers:\n%s", rows)
	}
	if code, r := in.do(t, "GET", "/api/tools/calculator", ""); code != 200 || r["version"] != float64(1) {
		t.Errorf("calculator = %d %v", code, r)
	}

	// A bodyless POST from another site is refused for its Origin.
	if code, _, raw := in.send(t, "POST", "/api/tools/calculator/run", "", map[string]string{"Origin": evil}); code != 403 {
		t.Errorf("bodyless POST from another site = %d %s", code, raw)
	}

	// The page's own requests, and clients that send no Origin, work.
	code, _, raw := in.send(t, "POST", "/api/tools/calculator/run", `{"expression":"2*3"}`, map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": in.url})
	if code != 200 || !strings.Contains(string(raw), `= 6"`) {
		t.Errorf("same-origin run = %d %s", code, raw)
	}
	port := in.url[strings.LastIndex(in.url, ":")+1:]
	code, _, raw = in.send(t, "POST", "/api/tools/calculator/run", `{"expression":"2*3"}`, map[string]string{"Content-Type": "application/json", "Host": "localhost:" + port, "Origin": "http://localhost:" + port})
	if code != 200 {
		t.Errorf("run through localhost = %d %s", code, raw)
	}

	code, h, page := in.send(t, "GET", "/", "", nil)
	csp := h.Get("Content-Security-Policy")
	if code != 200 || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "'unsafe-inline'") {
		t.Errorf("GET / = %d, Content-Security-Policy %q", code, csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("GET / headers = %v", h)
	}
	if regexp.MustCompile(`<script(\s[^>]*)?>[^<]`).Match(page) || regexp.MustCompile(`\son[a-z]+=`).Match(page) {
		t.Errorf("the page has inline script")
	}
	for _, src := range regexp.MustCompile(`<script src="([^"]+)"`).FindAllSubmatch(page, -1) {
		code, h, js := in.send(t, "GET", string(src[1]), "", nil)
		if code != 200 || !strings.Contains(h.Get("Content-Type"), "javascript") || len(js) == 0 {
			t.Errorf("GET %s = %d %s", src[1], code, h.Get("Content-Type"))
		}
	}
	if _, h, _ := in.send(t, "GET", "/api/tools/nope", "", nil); h.Get("Content-Security-Policy") == "" {
		t.Error("an error response has no security headers")
	}

	// An MCP client (JSON, no Origin) is still served.
	code, _, raw = in.send(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
	if code != 200 || !strings.Contains(string(raw), "serverInfo") {
		t.Errorf("MCP initialize = %d %s", code, raw)
	}
}

// holdingModel is a scripted model that holds every message saying "hold"
// until free is called (or the test ends), and deletes tools otherwise.
func holdingModel(t *testing.T) (*llmtest.Server, func()) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	return llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.LastUser(), "hold") {
			<-release
		}
		return deleteScript(r)
	}), free
}

// TestLimits sends what is too big, too often and too many at once.
func TestLimits(t *testing.T) {
	llmSrv, free := holdingModel(t)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_MAX_INFLIGHT"] = "1"
	env["ADAPTBOT_RATE_LIMIT"] = "5/min"
	in := start(t, env)
	jsonType := map[string]string{"Content-Type": "application/json"}

	big, _ := json.Marshal(map[string]string{"message": strings.Repeat("a", 32<<10+1)})
	code, _, raw := in.send(t, "POST", "/chat", string(big), jsonType)
	if code != 413 || !strings.Contains(string(raw), "ADAPTBOT_MAX_MESSAGE") {
		t.Errorf("long message = %d %s", code, raw)
	}
	hist := make([]map[string]string, adaptbot.MaxHistory+1)
	for i := range hist {
		hist[i] = map[string]string{"role": "user", "content": "hi"}
	}
	long, _ := json.Marshal(map[string]any{"message": "hi", "history": hist})
	if code, _, raw := in.send(t, "POST", "/chat", string(long), jsonType); code != 413 || !strings.Contains(string(raw), "at most the last 50") {
		t.Errorf("long history = %d %s", code, raw)
	}

	// One chat holds the only slot: the next is told to come back.
	held := make(chan int, 1)
	go func() {
		code, _, _ := in.send(t, "POST", "/chat", `{"message":"hold on"}`, jsonType)
		held <- code
	}()
	poll.Until(t, "the first chat to reach the model", func() bool { return len(llmSrv.Requests()) > 0 })
	code, h, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, jsonType)
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(raw), "ADAPTBOT_MAX_INFLIGHT") {
		t.Errorf("chat past the in-flight cap = %d %v %s", code, h, raw)
	}
	free()
	if code := <-held; code != 200 {
		t.Errorf("held chat = %d", code)
	}
	// Four chats so far (413, 413, held, 503); the fifth is allowed, the sixth is not.
	if code, _, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, jsonType); code != 200 {
		t.Errorf("fifth chat = %d %s", code, raw)
	}
	code, h, raw = in.send(t, "POST", "/chat", `{"message":"hello"}`, jsonType)
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(raw), "ADAPTBOT_RATE_LIMIT") {
		t.Errorf("chat past the rate = %d %v %s", code, h, raw)
	}
	// Direct runs are not chats or builds: the rate does not apply.
	if code, _, raw := in.send(t, "POST", "/api/tools/calculator/run", `{"expression":"1+1"}`, jsonType); code != 200 {
		t.Errorf("run after the rate = %d %s", code, raw)
	}
}

// TestOversizedBodyInOneWrite sends a body over the limit in one write,
// with a length and chunked, and reads the 413: the server must not reset
// the connection under a client that is still sending. 2 MB is the size the
// issue saw fail; here it fits in the loopback buffers, while 8 MB is reset
// without the lingering close.
func TestOversizedBodyInOneWrite(t *testing.T) {
	in := start(t, nil)
	addr := strings.TrimPrefix(in.url, "http://")
	for _, size := range []int{2 << 20, 8 << 20} {
		body := `{"message":"` + strings.Repeat("a", size) + `"}`
		for _, tt := range []struct{ name, head, body string }{
			{"length", fmt.Sprintf("POST /chat HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body)), body},
			{"chunked", fmt.Sprintf("POST /chat HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", addr), fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)},
		} {
			for i := 0; i < 2; i++ { // a reset is a race: give it a second chance to show
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conn.SetDeadline(time.Now().Add(20 * time.Second))
				if _, err := conn.Write([]byte(tt.head + tt.body)); err != nil {
					t.Errorf("%d bytes, %s: write: %v", size, tt.name, err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("%d bytes, %s: no answer: %v", size, tt.name, err)
				}
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 413 || !strings.Contains(string(raw), "too large") {
					t.Errorf("%d bytes, %s: %d %s", size, tt.name, resp.StatusCode, raw)
				}
				conn.Close()
			}
		}
	}
	if code, _ := in.do(t, "GET", "/healthz", ""); code != 200 {
		t.Errorf("/healthz after = %d", code)
	}
}

func openFiles(t *testing.T) int {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(fds)
}

// chatGoroutines counts goroutines still working on a chat.
func chatGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "adaptbot/agent.(*Agent).Chat(")
}

// TestClientLeaves checks that a client that gives up takes its work with
// it: the model request is cancelled, and no goroutine or file is left.
func TestClientLeaves(t *testing.T) {
	llmSrv := llmtest.New(t, llmtest.Always(llmtest.Hang()))
	env := modelEnv(llmSrv)
	env["ADAPTBOT_RATE_LIMIT"] = "off"
	in := start(t, env)
	// Warm up connections and pools so that the file count compares like with like.
	in.do(t, "GET", "/healthz", "")
	before := openFiles(t)

	// Plain chats and streamed chats by turns, then a build (a stream).
	const clients = 7
	for i := 0; i < clients; i++ {
		accept, path, body := "application/json", "/chat", `{"message":"hello"}`
		if i%2 == 1 {
			accept = "text/event-stream"
		}
		if i == clients-1 {
			accept, path, body = "text/event-stream", "/api/tools/build", `{"request":"make a tool that flips coins"}`
		}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", in.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", accept)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				// The event stream answers its headers at once; leave while it waits.
				<-ctx.Done()
				resp.Body.Close()
			}
		}()
		poll.Until(t, "the model to be asked", func() bool { return llmSrv.InFlight() == 1 })
		time.Sleep(time.Second)
		cancel()
		<-done
		if !llmSrv.WaitCancelled(i+1, 10*time.Second) {
			t.Fatalf("client %d (%s %s) left, and its model request was not cancelled", i, path, accept)
		}
	}
	poll.Until(t, "the abandoned chats to end", func() bool { return chatGoroutines() == 0 })
	poll.Until(t, "their files to close", func() bool { return openFiles(t) <= before+2 })
	if !llmSrv.WaitIdle(10 * time.Second) {
		t.Error("model requests still open")
	}
	poll.Until(t, "a row for each", func() bool { return len(in.rows(t)) == clients })
}

// TestBadJSONInPlainWords: a body of the wrong shape is named by its
// fields, never by our Go types.
func TestBadJSONInPlainWords(t *testing.T) {
	in := start(t, nil)
	for _, tt := range []struct{ path, body, want string }{
		{"/chat", `{"message": 5}`, `"message" must be a string, not a number`},
		{"/chat", `{"message": "hi", "history": {}}`, `"history" must be an array, not an object`},
		{"/chat", `[1]`, "want an object, got an array"},
		{"/chat", `{"message": "hi",}`, "not valid JSON: invalid character"},
		{"/api/tools/calculator/rollback", `{"version": "1"}`, `"version" must be a number, not a string`},
		{"/api/tools/calculator/rollback", `{"versio": 1}`, `unknown field "versio"`},
		{"/api/tools/Bad-Name/rollback", `{"version": 1}`, `Bad-Name`},
	} {
		code, r := in.do(t, "POST", tt.path, tt.body)
		if code != 400 || !strings.Contains(str(r["error"]), tt.want) || strings.Contains(str(r["error"]), "Go ") || strings.Contains(str(r["error"]), "chatRequest") {
			t.Errorf("%s %s = %d %v; want %q", tt.path, tt.body, code, r["error"], tt.want)
		}
	}
}

// TestModelFaultsAtTheEdge drives the whole server against a model that
// misbehaves on purpose: the provider's retries absorb one 429 or one 500;
// a model that stays rate-limited is a 503 with Retry-After, one that
// hangs a 504, one that keeps failing a 502; each names the provider and
// the model and nothing of ours.
func TestModelFaultsAtTheEdge(t *testing.T) {
	llmSrv := llmtest.New(t, deleteScript)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_MODEL_TIMEOUT"] = "1s"
	env["ADAPTBOT_MODEL_RETRIES"] = "1"
	env["ADAPTBOT_RATE_LIMIT"] = "off"
	in := start(t, env)
	for _, tt := range []struct {
		name       string
		script     func(llmtest.Request) llmtest.Reply
		status     int
		retryAfter bool
		want       string
	}{
		{"429 then OK", llmtest.Queue(deleteScript, llmtest.RateLimited("1")), 200, false, ""},
		{"500 then OK", llmtest.Queue(deleteScript, llmtest.Fail(500)), 200, false, ""},
		{"429 every time", llmtest.Always(llmtest.RateLimited("1")), 503, true, "rate-limited"},
		{"503 every time", llmtest.Always(llmtest.Fail(503)), 503, true, "try again later"},
		{"hang", llmtest.Always(llmtest.Hang()), 504, false, "did not answer in time"},
		{"500 every time", llmtest.Always(llmtest.Fail(500)), 502, false, "failed"},
		{"400", llmtest.Always(llmtest.Fail(400)), 502, false, "failed"},
	} {
		llmSrv.SetScript(tt.script)
		code, h, raw := in.send(t, "POST", "/chat", `{"message":"hello"}`, map[string]string{"Content-Type": "application/json"})
		body := string(raw)
		if code != tt.status || (h.Get("Retry-After") != "") != tt.retryAfter || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d Retry-After %q %s; want %d", tt.name, code, h.Get("Retry-After"), body, tt.status)
		}
		if code != 200 && (!strings.Contains(body, "openai model scripted") || !strings.Contains(body, "request_id")) {
			t.Errorf("%s: the answer does not name the provider and model: %s", tt.name, body)
		}
		for _, leak := range []string{"graph", "node", "intent:", "*llm", "Go "} {
			if code != 200 && strings.Contains(body, leak) {
				t.Errorf("%s: the answer leaks %q: %s", tt.name, leak, body)
			}
		}
	}

	// A stream says the same in its error event.
	llmSrv.SetScript(llmtest.Always(llmtest.RateLimited("2")))
	_, _, evs := in.events(t, "/chat", `{"message":"hello"}`)
	if last := evs[len(evs)-1]; !strings.HasPrefix(last, "error ") || !strings.Contains(last, `"status":503`) || !strings.Contains(last, `"retry_after":2`) {
		t.Errorf("streamed 429s = %v", evs)
	}
	if !llmSrv.WaitIdle(10 * time.Second) {
		t.Error("model requests still open")
	}
}
