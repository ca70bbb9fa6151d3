package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/egress/egresstest"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
	"adaptbot/telemetry/telemetrytest"
)

// A canary secret through every door, store and log (issue 37): its value
// must never show, in plain, base64 or URL-encoded form, in anything a
// person or a file can see. The webhook echoes the path and the
// Authorization header that carry it, so the value does come back in the
// answers, where the server must have masked it.
//
// The interpreted code's worker never holds it either: the frames between
// the server and a worker are checked by sandbox/http_test.go
// (TestSecretNeverCrossesThePipe), not again here.

// echoHost is the name of a second webhook of the test's own
// (startCanaryEcho); egresstest.Resolver maps it to 127.0.0.1.
const echoHost = "echo.example.com"

// startCanaryEcho starts a webhook at echoHost that echoes the path and
// the Authorization header it got in other forms (base64 in both
// alphabets, URL-encoded, and in a header of its answer), as a server
// that repeats a credential back in its own encoding would. It returns
// the server and the roots that trust it and the hook h both.
func startCanaryEcho(t *testing.T, h *hook) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	cert, err := egresstest.NewCertificate(echoHost)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", base64.StdEncoding.EncodeToString([]byte("auth="+auth)))
		fmt.Fprintf(w, "b64=%s b64url=%s query=%s path=%s",
			base64.StdEncoding.EncodeToString([]byte(auth)), base64.RawURLEncoding.EncodeToString([]byte(r.URL.Path)),
			url.QueryEscape(r.URL.Path), url.PathEscape(r.URL.Path))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := h.roots.Clone()
	roots.AppendCertsFromPEM(cert.CertPEM)
	return srv, roots
}

// canaryHook is a tool that posts to the webhook with the secret HOOK in
// its path and its Authorization header, and says what it answered, its
// X-Echo header included. Path is put after the secret ("/fail": the
// webhook answers 500); To, when set, is another server
// (https://host:port): the echo, or a host the tool does not declare. Its
// errors carry what the webhook answered.
func canaryHook(port string) string {
	return `// Package canary_hook posts a message to a webhook, with the secret in its path and header.
package canary_hook

import (
	"context"
	"encoding/json"
	"fmt"

	"adaptbot/toolkit"
)

// Hosts are the hosts the tool reaches: its requests go to no other.
const Hosts = "` + hookHost + `, ` + echoHost + `"

// Input is the message, and where it goes.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the message\"`" + `
	Path string ` + "`json:\"path,omitempty\" jsonschema:\"what follows the secret in the path\"`" + `
	To   string ` + "`json:\"to,omitempty\" jsonschema:\"another server, https://host:port\"`" + `
}

// Execute posts the message and says what the webhook answered.
func Execute(ctx context.Context, in Input) (string, error) {
	to := "https://` + hookHost + `:` + port + `"
	if in.To != "" {
		to = in.To
	}
	body, _ := json.Marshal(map[string]string{"text": in.Text})
	resp, err := toolkit.Do(ctx, toolkit.Request{Method: "POST",
		URL:    to + "/services/{{secret:HOOK}}" + in.Path,
		Header: map[string]string{"Authorization": "Bearer {{secret:HOOK}}", "Content-Type": "application/json"},
		Body:   string(body)})
	if err != nil {
		return "", err
	}
	if resp.Status >= 300 {
		return "", fmt.Errorf("the webhook answered %d: %s", resp.Status, resp.Body)
	}
	return "posted: " + resp.Body + " echo=" + resp.Header["X-Echo"], nil
}
`
}

// canaryAllow is an MCP client's person who allows each request they
// are asked about, and keeps what they were shown.
type canaryAllow struct {
	mu    sync.Mutex
	asked []string
}

func (a *canaryAllow) handler(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params.Message)
	a.mu.Unlock()
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow"}}, nil
}

func (a *canaryAllow) shown() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// canaryStdio runs `adaptbot mcp` with env and h in this process, as an
// MCP client that can elicit starts it: it forwards to the server at
// ADAPTBOT_ADDR, or serves the folder itself when none runs. stop ends
// the session and returns the command's error; stderr is what it printed.
func canaryStdio(t *testing.T, env map[string]string, h hooks, a *canaryAllow) (cs *sdk.ClientSession, stop func() error, stderr *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := runWith(context.Background(), []string{"adaptbot", "mcp"}, func(k string) string { return env[k] }, inR, outW, stderr, h)
		outW.Close()
		done <- err
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "canary", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: a.handler})
	cs, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		inW.Close()
		t.Fatalf("connect to adaptbot mcp: %v (it returned %v)\nstderr: %s", err, <-done, stderr)
	}
	stop = sync.OnceValue(func() error {
		cs.Close()
		inW.Close()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			return errors.New("adaptbot mcp did not end when its input did")
		}
	})
	t.Cleanup(func() { stop() })
	return cs, stop, stderr
}

// canaryCall calls tool over cs, keeps its result in seen, and checks it
// failed or not as it should, with the webhook's echo masked.
func canaryCall(t *testing.T, seen *canarySeen, place string, cs *sdk.ClientSession, tool string, args map[string]any, fails bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s tools/call %s: %v", place, tool, err)
	}
	text := canaryJSON(res)
	seen.add(place+" tools/call "+tool, text)
	if res.IsError != fails || !strings.Contains(text, "[secret:HOOK]") {
		t.Errorf("%s tools/call %s = %s", place, tool, text)
	}
}

// canaryExamples are two examples of post_hook and of canary_hook (which
// send the same request for a text alone), answered from their exchanges.
func canaryExamples(port string) string {
	var out []string
	for _, text := range []string{"deploy done", "tests pass"} {
		out = append(out, `{"input": {"text": "`+text+`"}, "contains": "posted",
  "http": [{"request": {"method": "POST", "url": "https://`+hookHost+`:`+port+`/services/{{secret:HOOK}}", "body": "{\"text\":\"`+text+`\"}"},
            "response": {"status": 200, "body": "ok"}}]}`)
	}
	return "[" + strings.Join(out, ",\n") + "]\n"
}

// TestCanarySecretNeverShows sets a canary secret (by the CLI, reading
// standard input, and by the API) and uses it through every door: chat as
// events and as plain JSON, the OpenAI-compatible door, the API, /mcp,
// `adaptbot mcp` on standard streams (forwarding to the server, and
// serving the folder itself once the server has stopped), the CLI; with
// requests allowed, denied, refused (undeclared host, nobody to ask),
// unanswered, and failing (failure cases). Two webhooks echo the value
// back, plain and base64- and URL-encoded. Then it reads everything a
// person or a file can show: every answer the test got (bodies and
// headers, a stream's events: pages, traces, failure cases, the secrets
// list), what the commands printed, every file under the server's folder
// (CSV, registry, traces, failure store, sealed secrets), the server's log
// and output, the exported spans, a bundle of the tools, the report's
// exports, and every request the model got (an automatic repair's too,
// when the failure cases start one). None shows the value in any form,
// under any escape (canaryViews); the webhook got it each time a request
// was let go, and only then; its echoes came back masked.
func TestCanarySecretNeverShows(t *testing.T) {
	canary := canaryValue()
	h := startHook(t)
	echo, roots := startCanaryEcho(t, h)
	rcv := telemetrytest.NewReceiver(t)
	const (
		byStream = "canary: post it, by the stream"
		byJSON   = "canary: post it, as plain JSON"
		byOpenAI = "canary: post it, by the OpenAI door"
		byFail   = "canary: post it where it fails"
	)
	script := newScript(
		map[string]string{byStream: "post_hook", byJSON: "post_hook", byOpenAI: "post_hook", byFail: "canary_hook"},
		map[string]string{byStream: `{"text": "by the stream"}`, byJSON: `{"text": "as plain JSON"}`,
			byOpenAI: `{"text": "by the OpenAI door"}`, byFail: `{"text": "by chat", "path": "/fail"}`})
	llmSrv := llmtest.New(t, script.reply)
	env := modelEnv(llmSrv)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rcv.URL
	in := startWith(t, env, actHooks(roots), func(dir string) {
		for name, src := range map[string]string{"post_hook": postHook(h.port()), "canary_hook": canaryHook(h.port())} {
			// Two examples each, answered from their exchanges, so that a
			// bundle may carry them.
			if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", name, "examples.json"), []byte(canaryExamples(h.port())), 0o644); err != nil {
				t.Fatal(err)
			}
			writeTool(t, dir, name, src)
		}
	})
	for _, name := range []string{"post_hook", "canary_hook"} {
		poll.Until(t, name+" serves", func() bool {
			code, _ := in.do(t, "GET", "/api/tools/"+name, "")
			return code == 200
		})
	}
	seen := &canarySeen{}
	cli := cliEnv(in.dir, serverAddr(t, in))
	masked := "[secret:HOOK]"
	hosts := hookHost + "," + echoHost
	echoURL := strings.Replace(echo.URL, "127.0.0.1", echoHost, 1)
	toEcho := `, "to": "` + echoURL + `"`
	stray := strings.Replace(echo.URL, "127.0.0.1", "stray.example.com", 1)
	unanswered := "https://" + strings.Replace(closedAddr(t), "127.0.0.1", echoHost, 1)
	answer := func(t *testing.T, decision string) func(ev sse) {
		return func(ev sse) {
			if ev.name == "approval" {
				a := approvalOf(t, ev)
				if code, r := seen.sendJSON(t, in, "POST", "/api/approvals/"+str(a["id"]), `{"decision": "`+decision+`"}`); code != 200 {
					t.Errorf("answer %s = %d %v", decision, code, r)
				}
			}
		}
	}

	t.Run("secrets", func(t *testing.T) {
		if out, err := seen.cli(t, cli, canary+"\n", "secrets", "set", "HOOK", "--host", hosts); err != nil || !strings.Contains(out, "HOOK set") {
			t.Fatalf("secrets set: %v\n%s", err, out)
		}
		// Refusals of a body that holds the value: none may quote it.
		for _, bad := range []string{
			`{"value": "` + canary + `", "hosts": []}`,
			`{"value": "` + canary + `\t", "hosts": ["` + hookHost + `"]}`,
			`{"value": "` + canary + `", "hosts": [`,
			`{"value": "` + canary + `", "hosts": ["` + hookHost + `"], "owner": "` + canary + `"}`,
			`{"value": ["` + canary + `"], "hosts": ["` + hookHost + `"]}`,
		} {
			if code, raw := seen.send(t, in, "PUT", "/api/secrets/HOOK", bad); code < 400 {
				t.Errorf("PUT %s = %d %s", bad, code, raw)
			}
		}
		if out, err := seen.cli(t, cli, canary+"\t\n", "secrets", "set", "HOOK", "--host", hosts); err == nil {
			t.Errorf("secrets set of a value with a tab: %s", out)
		}
		body := canaryJSON(map[string]any{"value": canary, "hosts": strings.Split(hosts, ",")})
		if code, r := seen.sendJSON(t, in, "PUT", "/api/secrets/HOOK", body); code != 200 || r["name"] != "HOOK" {
			t.Fatalf("PUT /api/secrets/HOOK = %d %v", code, r)
		}
		for _, args := range [][]string{{"secrets", "list"}, {"secrets", "list", "--format", "json"}} {
			if out, err := seen.cli(t, cli, "", args...); err != nil || !strings.Contains(out, "HOOK") {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
		}
	})

	t.Run("chat", func(t *testing.T) {
		code, evs := in.stream(t, "/chat", canaryJSON(map[string]string{"message": byStream}), nil, answer(t, "allow"))
		seen.events("POST /chat (events)", evs)
		if res := last(evs); code != 200 || res.name != "result" || !strings.Contains(res.data, masked) {
			t.Errorf("chat by the stream = %d %s %s", code, res.name, res.data)
		}
		code, evs = in.stream(t, "/chat", canaryJSON(map[string]string{"message": byFail}), nil, answer(t, "allow"))
		seen.events("POST /chat (events, a failing call)", evs)
		if res := last(evs); code != 200 || !strings.Contains(res.data, "500") || !strings.Contains(res.data, masked) {
			t.Errorf("chat with a failing call = %d %s %s", code, res.name, res.data)
		}

		// Plain JSON: the answer waits for the decision.
		type reply struct {
			code int
			raw  []byte
			err  error
		}
		done := make(chan reply, 1)
		go func() {
			code, raw, err := seen.post(in, "POST", "/chat", canaryJSON(map[string]string{"message": byJSON}))
			done <- reply{code, raw, err}
		}()
		var id string
		poll.Until(t, "the plain chat's approval waits", func() bool {
			_, r := seen.sendJSON(t, in, "GET", "/api/approvals", "")
			if list, _ := r["approvals"].([]any); len(list) == 1 {
				id = str(list[0].(map[string]any)["id"])
			}
			return id != ""
		})
		if code, r := seen.sendJSON(t, in, "POST", "/api/approvals/"+id, `{"decision": "allow"}`); code != 200 {
			t.Errorf("allow = %d %v", code, r)
		}
		if r := <-done; r.err != nil || r.code != 200 || !strings.Contains(string(r.raw), masked) {
			t.Errorf("plain chat = %d %s %v", r.code, r.raw, r.err)
		}

		// The OpenAI-compatible door cannot ask anyone: refused, unsent.
		code, raw := seen.send(t, in, "POST", "/v1/chat/completions",
			canaryJSON(map[string]any{"model": "adaptbot", "messages": []map[string]string{{"role": "user", "content": byOpenAI}}}))
		if code != 200 || !strings.Contains(string(raw), "cannot ask them") || !strings.Contains(string(raw), "nothing was sent") {
			t.Errorf("OpenAI door = %d %s", code, raw)
		}
	})

	t.Run("api", func(t *testing.T) {
		for _, c := range []struct {
			tool, args, decision, last, want string
		}{
			{"post_hook", `{"text": "by the API"}`, "allow", "result", masked},
			{"post_hook", `{"text": "denied by the API"}`, "deny", "error", "nothing was"},
			{"canary_hook", `{"text": "fails by the API", "path": "/fail"}`, "allow", "error", masked},
			{"canary_hook", `{"text": "echoed by the API"` + toEcho + `}`, "allow", "result", masked},
			{"canary_hook", `{"text": "strays", "to": "` + stray + `"}`, "allow", "error", "stray.example.com"},
			{"canary_hook", `{"text": "unanswered", "to": "` + unanswered + `"}`, "allow", "error", "{{secret:HOOK}}: dial tcp"},
		} {
			code, evs := in.stream(t, "/api/tools/"+c.tool+"/run", c.args, nil, answer(t, c.decision))
			seen.events("POST /api/tools/"+c.tool+"/run (events) "+c.args, evs)
			if res := last(evs); code != 200 || res.name != c.last || !strings.Contains(res.data, c.want) {
				t.Errorf("run %s %s (%s) = %d %s %s", c.tool, c.args, c.decision, code, res.name, res.data)
			}
		}
		// A plain JSON run has nobody to ask: refused, unsent.
		if code, raw := seen.send(t, in, "POST", "/api/tools/post_hook/run", `{"text": "plain"}`); code == 200 || !strings.Contains(string(raw), "cannot ask them") {
			t.Errorf("a plain run that needs approval = %d %s", code, raw)
		}
	})

	t.Run("mcp", func(t *testing.T) {
		var person canaryAllow
		client := sdk.NewClient(&sdk.Implementation{Name: "canary", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: person.handler})
		cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp", HTTPClient: seen.client()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		canaryCall(t, seen, "/mcp", cs, "post_hook", map[string]any{"text": "by MCP"}, false)
		canaryCall(t, seen, "/mcp", cs, "canary_hook", map[string]any{"text": "fails by MCP", "path": "/fail"}, true)
		canaryCall(t, seen, "/mcp", cs, "canary_hook", map[string]any{"text": "echoed by MCP", "to": echoURL}, false)

		// `adaptbot mcp` on standard streams, forwarding to the server.
		fwd, stop, stderr := canaryStdio(t, cli, testHooks(nil), &person)
		canaryCall(t, seen, "adaptbot mcp (forwarding)", fwd, "post_hook", map[string]any{"text": "by MCP on stdio"}, false)
		if err := stop(); err != nil {
			t.Errorf("adaptbot mcp: %v", err)
		}
		seen.add("adaptbot mcp (forwarding): stderr", stderr.String())
		shown := person.shown()
		seen.add("MCP elicitations", strings.Join(shown, "\n"))
		if len(shown) != 4 {
			t.Errorf("elicitations = %q", shown)
		}
	})

	t.Run("cli", func(t *testing.T) {
		if out, err := seen.cli(t, cli, "", "tools", "run", "post_hook", `{"text": "by the CLI"}`, "--yes"); err != nil || !strings.Contains(out, masked) {
			t.Errorf("tools run --yes: %v\n%s", err, out)
		}
		if out, err := seen.cli(t, cli, "", "tools", "run", "canary_hook", `{"text": "fails by the CLI", "path": "/fail"}`, "--yes", "--format", "json"); err == nil || !strings.Contains(out, masked) {
			t.Errorf("a failing tools run: %v\n%s", err, out)
		}
		if out, err := seen.cli(t, cli, "", "tools", "run", "post_hook", `{"text": "no terminal, no --yes"}`); err == nil {
			t.Errorf("tools run without a terminal or --yes: %s", out)
		}
		for _, args := range [][]string{
			{"tools", "failures", "canary_hook"}, {"tools", "failures", "canary_hook", "--format", "json"},
			{"tools", "show", "canary_hook", "--format", "json"}, {"tools", "history", "post_hook"},
		} {
			if out, err := seen.cli(t, cli, "", args...); err != nil {
				t.Errorf("%v: %v\n%s", args, err, out)
			}
		}
	})

	t.Run("reads", func(t *testing.T) {
		for _, path := range []string{
			"/", "/tools", "/tools/post_hook", "/tools/canary_hook", "/dashboard", "/secrets", "/healthz", "/metrics",
			"/api/me", "/api/secrets", "/api/approvals", "/api/tools", "/api/tools/post_hook", "/api/tools/canary_hook",
			"/api/tools/post_hook/versions", "/api/tools/canary_hook/versions", "/api/failures", "/api/tools/post_hook/failures",
			"/api/benchmarks", "/api/requests?limit=500", "/api/skills",
		} {
			if code, raw := seen.send(t, in, "GET", path, ""); code != 200 && path != "/metrics" {
				t.Errorf("GET %s = %d %.300s", path, code, raw)
			}
		}
		// Failure cases were recorded, and show the echo masked.
		code, r := seen.sendJSON(t, in, "GET", "/api/tools/canary_hook/failures", "")
		if cases, _ := r["cases"].([]any); code != 200 || len(cases) == 0 || !strings.Contains(str(r), masked) {
			t.Errorf("canary_hook's failure cases = %d %v", code, r)
		}
		// Every request's trace, as the API and the page show it.
		ids := 0
		for _, r := range in.rows(t) {
			id := r["request_id"]
			if code, raw := seen.send(t, in, "GET", "/api/requests/"+id, ""); code != 200 {
				t.Errorf("GET /api/requests/%s = %d %.300s", id, code, raw)
			}
			if code, raw := seen.send(t, in, "GET", "/requests/"+id, ""); code != 200 {
				t.Errorf("GET /requests/%s = %d %.300s", id, code, raw)
			}
			ids++
		}
		if ids < 20 {
			t.Errorf("%d rows, want one per request", ids)
		}
	})

	// `adaptbot mcp` with no server running serves the folder itself:
	// its own secrets, sending and log.
	in.stop()
	var person canaryAllow
	own, stop, stderr := canaryStdio(t, cliEnv(in.dir, closedAddr(t)), actHooks(roots), &person)
	canaryCall(t, seen, "adaptbot mcp (serving the folder)", own, "post_hook", map[string]any{"text": "by MCP, no server"}, false)
	canaryCall(t, seen, "adaptbot mcp (serving the folder)", own, "canary_hook", map[string]any{"text": "fails by MCP, no server", "path": "/fail"}, true)
	if err := stop(); err != nil {
		t.Errorf("adaptbot mcp serving the folder: %v", err)
	}
	seen.add("adaptbot mcp (serving the folder): stderr", stderr.String())
	seen.add("its elicitations", strings.Join(person.shown(), "\n"))

	// What it sent: the value, each time a request was let go, and only
	// then (chat ×3, API ×2, /mcp ×2, adaptbot mcp ×3, CLI ×2; canary_hook's,
	// which fail, in the header too).
	got := h.requests()
	headers := 0
	for _, r := range got {
		if !strings.HasPrefix(r.Path, "/services/"+canary) || (r.Auth != "" && r.Auth != "Bearer "+canary) {
			t.Errorf("the webhook got %s %q (auth %q), not the value", r.Method, r.Path, r.Auth)
		}
		if r.Auth != "" {
			headers++
		}
	}
	if len(got) != 12 || headers != 5 {
		t.Errorf("the webhook got %d requests, %d with the header; want 12 (the allowed ones), 5: %v", len(got), headers, got)
	}

	// What the server keeps, once it has stopped and flushed.
	seen.add("the server's log (stderr)", in.log.String())
	seen.add("the server's output (stdout)", in.out.String())
	if files := seen.tree(t, in.dir); files < 10 {
		t.Errorf("%d files under the server's folder", files)
	}
	sealed := filepath.Join(in.dir, "secrets.json")
	if fi, err := os.Stat(sealed); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
		t.Errorf("the sealed secrets file: %v %v", fi, err)
	}
	spans := rcv.WaitFor(t, 30*time.Second, func(s []telemetrytest.Span) bool {
		return len(telemetrytest.Named(s, "execute_tool post_hook")) > 0 && len(telemetrytest.Named(s, "execute_tool canary_hook")) > 0
	})
	for _, s := range spans {
		seen.add("span "+s.Name, canaryJSON(s))
	}

	// The exports: the report's, and a bundle of the tools.
	off := cliEnv(in.dir, closedAddr(t))
	for _, f := range []string{"text", "md", "json", "csv"} {
		if out, err := seen.cli(t, off, "", "report", "--format", f); err != nil || len(out) < 100 {
			t.Errorf("report --format %s: %v\n%s", f, err, out)
		}
	}
	bundle := filepath.Join(t.TempDir(), "tools.tar.gz")
	if out, err := seen.cli(t, off, "", "tools", "export", "post_hook", "canary_hook", "--bundle", bundle); err != nil {
		t.Errorf("export --bundle: %v\n%s", err, out)
	} else if names := seen.bundle(t, bundle); len(names) < 2 {
		t.Errorf("the bundle holds %q", names)
	}
	// A module of its own cannot act through the server's secrets: the
	// tools are refused, and the refusal is kept with the rest.
	if out, err := seen.cli(t, off, "", "tools", "export", "post_hook", "--out", filepath.Join(t.TempDir(), "mytools")); err == nil {
		t.Errorf("export --out of a tool that acts: %s", out)
	}

	// The model never saw it; it saw the masked echo.
	reqs := llmSrv.Requests()
	sawMasked := false
	for i, r := range reqs {
		text := canaryJSON(r)
		seen.add(fmt.Sprintf("request %d to the model", i+1), text)
		sawMasked = sawMasked || strings.Contains(text, masked)
	}
	if len(reqs) < 6 || !sawMasked {
		t.Errorf("the model got %d requests; one shows the masked echo: %v", len(reqs), sawMasked)
	}

	n := seen.check(t, canary)
	t.Logf("searched %d answers, files, logs, exports and model requests for the canary", n)
}
