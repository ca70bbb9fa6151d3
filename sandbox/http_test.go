package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/sandbox"
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
	opts.CallTimeout = 300 * time.Millisecond
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
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
			res, err := r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
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
			_, err = r.Run(ctx, sandbox.Call{Tool: "poster", Source: []byte(poster), Input: []byte(`{"text":"hi"}`)})
			if sandbox.KindOf(err) != "timeout" {
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
