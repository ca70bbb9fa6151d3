package sandbox_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/egress"
	"adaptbot/identity"
	"adaptbot/sandbox"
	"adaptbot/secrets"
	"adaptbot/toolkit"
)

// senderFunc is a toolkit.Sender made of a function.
type senderFunc func(ctx context.Context, req toolkit.Request) (toolkit.Response, error)

func (f senderFunc) Send(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
	return f(ctx, req)
}

var _ toolkit.Sender = senderFunc(nil)

// poster posts its text to a hook and says what came back.
const poster = `// Package poster posts a text.
package poster

import (
	"context"
	"errors"
	"fmt"

	"adaptbot/toolkit"
)

const Hosts = "hooks.example.com"

type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.Do(ctx, toolkit.Request{Method: "post", URL: "https://hooks.example.com/{{secret:HOOK}}",
		Header: map[string]string{"Content-Type": "text/plain"}, Body: in.Text})
	if err != nil {
		if errors.Is(err, toolkit.ErrBlocked) {
			return "blocked: " + err.Error(), nil
		}
		return "", err
	}
	return fmt.Sprintf("%d %s %s", resp.Status, resp.Header["X-Echo"], resp.Body), nil
}
`

// TestHTTPGoesThroughTheHost: a tool's request crosses to the host's
// Sender as the tool wrote it, placeholder and all, and the answer comes
// back; ErrBlocked survives the crossing; without a Sender, a POST is
// refused with an error that says so.
func TestHTTPGoesThroughTheHost(t *testing.T) {
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			var got toolkit.Request
			ctx := toolkit.WithSender(context.Background(), senderFunc(func(_ context.Context, req toolkit.Request) (toolkit.Response, error) {
				got = req
				return toolkit.Response{Status: 201, Header: map[string]string{"X-Echo": "yes"}, Body: "made"}, nil
			}))
			res, err := r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
			if err != nil || res.Output != "201 yes made" {
				t.Fatalf("got %q, %v", res.Output, err)
			}
			if got.Method != "POST" || got.URL != "https://hooks.example.com/{{secret:HOOK}}" || got.Body != "hi" || got.Header["Content-Type"] != "text/plain" {
				t.Errorf("the host got %+v", got)
			}

			ctx = toolkit.WithSender(context.Background(), senderFunc(func(context.Context, toolkit.Request) (toolkit.Response, error) {
				return toolkit.Response{}, fmt.Errorf("dial: %w", toolkit.ErrBlocked)
			}))
			res, err = r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
			if err != nil || !strings.HasPrefix(res.Output, "blocked: POST https://hooks.example.com/{{secret:HOOK}}: dial:") {
				t.Errorf("blocked: got %q, %v", res.Output, err)
			}

			_, err = run(t, r, "poster", poster, `{"text":"hi"}`)
			wantKind(t, err, "error", "a POST request needs the approval of the person asking, and none can be asked here")
		})
	}
}

// TestHTTPWaitForAPersonIsNotTheToolsTime: while the host waits for a
// person (toolkit.Pause), the call's time limit stops, in the worker and
// on the host, so an answer that takes longer than the limit still reaches
// the tool.
func TestHTTPWaitForAPersonIsNotTheToolsTime(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 10 * time.Second
	opts.PoolSize = 1
	const limit = 300 * time.Millisecond
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
			// Loaded first: loading counts against the limit, and a loaded
			// machine (-race) may take longer than it to load.
			if err := compileWithin(r, "poster", poster, opts.CallTimeout); err != nil {
				t.Fatal(err)
			}
			ctx := toolkit.WithSender(context.Background(), senderFunc(func(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
				resume := toolkit.Pause(ctx)
				defer resume()
				select {
				case <-time.After(time.Second): // the person takes their time
				case <-ctx.Done():
					return toolkit.Response{}, ctx.Err()
				}
				return toolkit.Response{Status: 200, Body: "ok"}, nil
			}))
			res, err := r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`), Timeout: limit})
			if err != nil || res.Output != "200  ok" {
				t.Fatalf("got %q, %v; want the answer after a wait past the limit", res.Output, err)
			}
			// Without the pause, the limit holds.
			ctx = toolkit.WithSender(context.Background(), senderFunc(func(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
				select {
				case <-time.After(5 * time.Second):
				case <-ctx.Done():
					return toolkit.Response{}, ctx.Err()
				}
				return toolkit.Response{Status: 200}, nil
			}))
			_, err = r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`), Timeout: limit})
			if adaptbot.FailureOf(err) != "timeout" {
				t.Fatalf("a slow send without a pause: %v, want a timeout", err)
			}
		})
	}
}

// TestHTTPFramesCarryNoValue: what crosses the worker's pipe is the
// request as the tool wrote it and the answer as the host gives it; a
// value the host holds (a secret) and keeps out of both never appears in a
// frame.
func TestHTTPFramesCarryNoValue(t *testing.T) {
	const canary = "canary-7f3a9c1e"
	var mu sync.Mutex
	var frames []string
	sandbox.TapFrames(t, func(b []byte) {
		mu.Lock()
		frames = append(frames, string(b))
		mu.Unlock()
	})
	p := newPool(t, testOptions(t))
	ctx := toolkit.WithSender(context.Background(), senderFunc(func(_ context.Context, req toolkit.Request) (toolkit.Response, error) {
		// The host puts the value in and masks it in the answer.
		sent := strings.ReplaceAll(req.URL, "{{secret:HOOK}}", canary)
		echo := strings.ReplaceAll(sent, canary, "[secret:HOOK]")
		return toolkit.Response{Status: 200, Body: echo}, nil
	}))
	res, err := p.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
	if err != nil || !strings.Contains(res.Output, "[secret:HOOK]") {
		t.Fatalf("got %q, %v", res.Output, err)
	}
	mu.Lock()
	defer mu.Unlock()
	sawRequest := false
	for _, f := range frames {
		if strings.Contains(f, canary) {
			t.Errorf("a frame carries the value: %s", f)
		}
		sawRequest = sawRequest || strings.Contains(f, `{{secret:HOOK}}`)
	}
	if !sawRequest {
		t.Error("no frame carried the request: the tap saw nothing")
	}
}

// A tool's request that the runner was never given a Sender for goes to
// the tool's declared hosts alone.
func TestHTTPReadOnlyKeepsToDeclaredHosts(t *testing.T) {
	const src = `// Package getter gets a URL.
package getter

import (
	"context"

	"adaptbot/toolkit"
)

const Hosts = "api.example.com"

type Input struct {
	URL string ` + "`json:\"url\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	return toolkit.Get(ctx, in.URL)
}
`
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, r, "getter", src, `{"url":"https://elsewhere.example.com/"}`)
			wantKind(t, err, "error", "elsewhere.example.com is not among the hosts the tool declares (api.example.com)")
			if errors.Is(err, toolkit.ErrBlocked) {
				t.Error("a refusal of the tool's own rules is not the egress policy's")
			}
		})
	}
}

// TestSecretNeverCrossesThePipe: with the server's own sending (package
// egress) and a real secret, the value reaches the pinned server, and no
// frame between the server and the worker ever holds it, in any form:
// the request crosses as the tool wrote it, the echo comes back masked.
func TestSecretNeverCrossesThePipe(t *testing.T) {
	const canary = "canary-wQ4zP8sL1nV6"
	var got atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization") + " " + r.URL.RawQuery)
		fmt.Fprintf(w, "you sent %s and %s (%s)", r.Header.Get("Authorization"), r.URL.RawQuery,
			base64.StdEncoding.EncodeToString([]byte(r.Header.Get("Authorization"))))
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	client := toolkit.NewClient(toolkit.Options{
		Policy:   toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: oneHost{}, TLS: &tls.Config{RootCAs: roots},
	})
	store, err := secrets.Open(&secrets.MemoryBackend{}, []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	who := identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	ctx := identity.With(context.Background(), who)
	if _, err := store.Set(ctx, "TOKEN", canary, []string{"api.example.com"}, false); err != nil {
		t.Fatal(err)
	}
	host := egress.New(egress.Options{Client: client, Secrets: store})

	var mu sync.Mutex
	var frames []string
	sandbox.TapFrames(t, func(b []byte) {
		mu.Lock()
		frames = append(frames, string(b))
		mu.Unlock()
	})
	const src = `// Package whoami asks an API who the caller is.
package whoami

import (
	"context"

	"adaptbot/toolkit"
)

const Hosts = "api.example.com"

type Input struct {
	URL string ` + "`json:\"url\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.Do(ctx, toolkit.Request{URL: in.URL + "?key={{secret:TOKEN}}", Header: map[string]string{"Authorization": "Bearer {{secret:TOKEN}}"}})
	if err != nil {
		return "", err
	}
	return resp.Body, nil
}
`
	p := newPool(t, testOptions(t))
	ctx = egress.Bind(ctx, host, egress.Tool{Name: "whoami", Version: 1, SHA256: sandbox.Digest("whoami", []byte(src)), Hosts: []string{"api.example.com"}})
	res, err := p.Run(ctx, sandbox.Call{Tool: "whoami", Source: []byte(src), Input: []byte(fmt.Sprintf(`{"url":"https://api.example.com:%d/me"}`, port))})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := got.Load().(string); s != "Bearer "+canary+" key="+canary {
		t.Fatalf("the server got %q", s)
	}
	if strings.Contains(res.Output, canary) || !strings.Contains(res.Output, "you sent Bearer [secret:TOKEN] and key=[secret:TOKEN]") {
		t.Fatalf("the tool got %q", res.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	forms := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString([]byte("Bearer " + canary))}
	for _, f := range frames {
		for _, form := range forms {
			if strings.Contains(f, form) {
				t.Errorf("a frame holds %q: %s", form, f)
			}
		}
	}
	if len(frames) < 4 {
		t.Errorf("only %d frames seen", len(frames))
	}
}

// oneHost resolves api.example.com to loopback.
type oneHost struct{}

func (oneHost) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "api.example.com" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestUnsentSaysNothingRan: a call refused before it reached a worker is
// unsent (another tier may run it); one whose worker it reached is not,
// even when the pool closes under it, so that nothing it sent is sent
// again.
func TestUnsentSaysNothingRan(t *testing.T) {
	p := newPool(t, testOptions(t))
	started := make(chan struct{})
	ctx := toolkit.WithSender(context.Background(), senderFunc(func(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
		close(started)
		<-ctx.Done()
		return toolkit.Response{}, ctx.Err()
	}))
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
		done <- err
	}()
	<-started
	p.Close()
	err := <-done
	if err == nil || sandbox.Unsent(err) {
		t.Errorf("closed under a running call: %v (unsent %v)", err, sandbox.Unsent(err))
	}
	_, err = run(t, p, "echo", echo, `{"text":"x"}`)
	if !sandbox.Unsent(err) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a closed pool: %v (unsent %v)", err, sandbox.Unsent(err))
	}
}

// compileWithin loads tool in r, giving it limit to load however loaded
// the machine is.
func compileWithin(r sandbox.Runner, tool, src string, limit time.Duration) error {
	_, err := r.Run(toolkit.WithSender(context.Background(), senderFunc(func(context.Context, toolkit.Request) (toolkit.Response, error) {
		return toolkit.Response{Status: 200}, nil
	})), sandbox.Call{Tool: tool, Source: []byte(src), Input: []byte(`{"text":"warm"}`), Timeout: limit})
	return err
}
