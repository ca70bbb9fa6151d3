package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"adaptbot/egress/egresstest"
	"adaptbot/poll"
	"adaptbot/toolkit"
)

// The doors of tools that act (issue 37), tested as people meet them: a
// tool posts JSON to a webhook of the test's own through a secret and an
// approval given at the door the request came through.

// hookHost is the webhook's name: egresstest.Resolver maps it to
// 127.0.0.1, and its certificate names it.
const hookHost = "hooks.example.com"

// hook is a loopback HTTPS webhook of the test's own, reached by name
// under a certificate made for it. It keeps each request and echoes its
// path and Authorization header back, so that a secret the server put in
// comes back in the answer, where it must be masked. A path ending in
// /fail answers 500.
type hook struct {
	srv   *httptest.Server
	roots *x509.CertPool
	mu    sync.Mutex
	got   []hookRequest
}

// hookRequest is one request the webhook received.
type hookRequest struct{ Method, Path, Auth, Body string }

func startHook(t *testing.T) *hook {
	t.Helper()
	cert, err := egresstest.NewCertificate(hookHost)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	h := &hook{roots: cert.Roots}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, hookRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(body)})
		h.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusInternalServerError)
		}
		fmt.Fprintf(w, "path=%s auth=%s", r.URL.Path, r.Header.Get("Authorization"))
	}))
	h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

// port is the webhook's port on 127.0.0.1.
func (h *hook) port() string {
	u, _ := url.Parse(h.srv.URL)
	return u.Port()
}

// requests returns what the webhook received so far.
func (h *hook) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// actHooks lets the server's clients reach the tests' servers by name
// (egresstest.Resolver) over TLS they trust with roots, on loopback.
func actHooks(roots *x509.CertPool) hooks {
	return hooks{toolkit: func(o *toolkit.Options) {
		e := egresstest.ToolkitOptions(roots)
		o.Policy.AllowNets = append(o.Policy.AllowNets, e.Policy.AllowNets...)
		o.Resolver, o.TLS = e.Resolver, e.TLS
	}}
}

// postHook is a tool that posts {"text"} to the webhook with the secret
// HOOK in its path, and says what the webhook answered.
func postHook(port string) string {
	return `// Package post_hook posts a message to the team's webhook.
package post_hook

import (
	"context"

	"adaptbot/toolkit"
)

// Hosts are the hosts the tool reaches: its requests go to no other.
const Hosts = "` + hookHost + `"

// Input is the message.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the message\"`" + `
}

// Execute posts the message.
func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.PostJSON(ctx, "https://` + hookHost + `:` + port + `/services/{{secret:HOOK}}", nil, map[string]string{"text": in.Text})
	if err != nil {
		return "", err
	}
	return "posted: " + resp.Body, nil
}
`
}

// postHookExample is post_hook's example, answered from its exchange.
func postHookExample(port string) string {
	return `[{"input": {"text": "deploy done"}, "contains": "posted",
  "http": [{"request": {"method": "POST", "url": "https://` + hookHost + `:` + port + `/services/{{secret:HOOK}}", "body": "{\"text\":\"deploy done\"}"},
            "response": {"status": 200, "body": "ok"}}]}]`
}

// sse is one Server-Sent Event.
type sse struct{ name, data string }

// stream posts body to path asking for Server-Sent Events with headers,
// calls on with each event as it arrives (it may answer an approval
// meanwhile), and returns the status and every event.
func (in *instance) stream(t *testing.T, path, body string, headers map[string]string, on func(ev sse)) (int, []sse) {
	t.Helper()
	req, err := http.NewRequest("POST", in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sse
	var ev sse
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && ev.name != "":
			out = append(out, ev)
			if on != nil {
				on(ev)
			}
			ev = sse{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if resp.StatusCode == http.StatusOK && len(out) == 0 {
		t.Fatalf("POST %s: a stream with no event", path)
	}
	return resp.StatusCode, out
}

// last is the last event of evs, or a zero one.
func last(evs []sse) sse {
	if len(evs) == 0 {
		return sse{}
	}
	return evs[len(evs)-1]
}

// approvalOf decodes an approval event.
func approvalOf(t *testing.T, ev sse) map[string]any {
	t.Helper()
	var a map[string]any
	if ev.name != "approval" || json.Unmarshal([]byte(ev.data), &a) != nil {
		t.Fatalf("want an approval event, got %s %s", ev.name, ev.data)
	}
	return a
}

// TestApprovalExpiresAndNothingIsSent: a tool's POST waits for its
// person, who does not answer within ADAPTBOT_APPROVAL_TIMEOUT. The run
// says it expired and that nothing was sent; the webhook got nothing; the
// expiry is a row of its own (APPROVE, expired), not a denial; a late
// answer finds it gone (410); and the expiry makes no failure case.
func TestApprovalExpiresAndNothingIsSent(t *testing.T) {
	h := startHook(t)
	in := startWith(t, map[string]string{"ADAPTBOT_APPROVAL_TIMEOUT": "1s"}, actHooks(h.roots), func(dir string) {
		writeTool(t, dir, "post_hook", postHook(h.port()))
	})
	poll.Until(t, "post_hook serves", func() bool {
		code, _ := in.do(t, "GET", "/api/tools/post_hook", "")
		return code == 200
	})
	if code, r := in.do(t, "PUT", "/api/secrets/HOOK", `{"value": "expiry-secret-4711", "hosts": ["`+hookHost+`"]}`); code != 200 || r["value"] != nil {
		t.Fatalf("set the secret = %d %v", code, r)
	}
	code, evs := in.stream(t, "/api/tools/post_hook/run", `{"text": "deploy done"}`, nil, nil)
	if code != 200 || len(evs) != 2 {
		t.Fatalf("run = %d %v", code, evs)
	}
	a := approvalOf(t, evs[0])
	if a["tool"] != "post_hook" || a["method"] != "POST" || !strings.Contains(str(a["url"]), "{{secret:HOOK}}") ||
		a["body"] != `{"text":"deploy done"}` || a["expires"] == "" || a["id"] == "" {
		t.Errorf("approval event = %v", a)
	}
	if ev := evs[1]; ev.name != "error" || !strings.Contains(ev.data, "not approved within") || !strings.Contains(ev.data, "nothing was sent") {
		t.Errorf("last event = %s %s", ev.name, ev.data)
	}
	if got := h.requests(); len(got) != 0 {
		t.Errorf("the webhook got %v", got)
	}
	if code, r := in.do(t, "POST", "/api/approvals/"+str(a["id"]), `{"decision": "allow"}`); code != http.StatusGone {
		t.Errorf("a late answer = %d %v", code, r)
	}
	var expired, answer, run map[string]string
	for _, r := range in.rows(t) {
		switch {
		case r["intent"] == "APPROVE" && r["category"] == "expired":
			expired = r
		case r["intent"] == "APPROVE":
			answer = r
		case r["intent"] == "RUN":
			run = r
		}
	}
	if expired == nil || run == nil || expired["rated_request"] != run["request_id"] || expired["tools"] != "post_hook" ||
		!strings.Contains(expired["query"], str(a["id"])) || !strings.Contains(expired["query"], "digest ") {
		t.Errorf("expiry row = %v, run row = %v", expired, run)
	}
	if answer == nil || answer["error_kind"] != "gone" {
		t.Errorf("the late answer's row = %v", answer)
	}
	if _, r := in.do(t, "GET", "/api/tools/post_hook/failures", ""); str(r["open"]) != "0" {
		t.Errorf("an expiry made a failure case: %v", r)
	}
}
