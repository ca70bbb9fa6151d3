package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"adaptbot/toolkit"
)

// senderFunc is a toolkit.Sender made of a function.
type senderFunc func(ctx context.Context, req toolkit.Request) (toolkit.Response, error)

func (f senderFunc) Send(ctx context.Context, req toolkit.Request) (toolkit.Response, error) {
	return f(ctx, req)
}

// TestDoGoesToTheSender: Do hands the request, method upper-cased, to the
// context's Sender and names it in an error; PostJSON encodes its body and
// fails on a status outside 2xx; Get is Do with GET.
func TestDoGoesToTheSender(t *testing.T) {
	var got []toolkit.Request
	status := 200
	ctx := toolkit.WithSender(context.Background(), senderFunc(func(_ context.Context, req toolkit.Request) (toolkit.Response, error) {
		got = append(got, req)
		if strings.Contains(req.URL, "fail") {
			return toolkit.Response{}, errors.New("refused for a reason")
		}
		return toolkit.Response{Status: status, Body: `{"n":1}`}, nil
	}))
	if _, err := toolkit.Do(ctx, toolkit.Request{Method: "put", URL: "https://a.example.org/x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := toolkit.Do(ctx, toolkit.Request{URL: "https://a.example.org/fail?key=k"}); err == nil || err.Error() != "GET https://a.example.org/fail?…: refused for a reason" {
		t.Errorf("error %v", err)
	}
	if _, err := toolkit.PostJSON(ctx, "https://a.example.org/p", map[string]string{"X-A": "1"}, map[string]int{"n": 2}); err != nil {
		t.Fatal(err)
	}
	var v struct{ N int }
	if err := toolkit.GetJSON(ctx, "https://a.example.org/j", &v); err != nil || v.N != 1 {
		t.Errorf("GetJSON: %+v, %v", v, err)
	}
	status = 500
	if _, err := toolkit.PostJSON(ctx, "https://a.example.org/p", nil, 1); err == nil || !strings.Contains(err.Error(), "status 500 Internal Server Error") {
		t.Errorf("PostJSON on a 500: %v", err)
	}
	if got[0].Method != "PUT" || got[1].Method != "GET" || got[2].Method != "POST" || got[2].Body != `{"n":2}` ||
		got[2].Header["Content-Type"] != "application/json" || got[2].Header["X-A"] != "1" || got[3].Method != "GET" {
		t.Errorf("the sender got %+v", got)
	}
}

// TestDoWithoutSenderReadsOnly: where no Sender serves the call, GET and
// HEAD go through the context's Client, and nothing else, nor a secret.
func TestDoWithoutSenderReadsOnly(t *testing.T) {
	var hits atomic.Int32
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); fmt.Fprint(w, "ok") })
	ctx := toolkit.WithClient(context.Background(), toolkit.NewClient(toolkit.Options{Policy: allowLoopback}))
	if resp, err := toolkit.Do(ctx, toolkit.Request{Method: "HEAD", URL: srv.URL}); err != nil || resp.Status != 200 {
		t.Fatalf("HEAD: %+v, %v", resp, err)
	}
	for _, req := range []toolkit.Request{
		{Method: "POST", URL: srv.URL, Body: "x"},
		{Method: "DELETE", URL: srv.URL},
		{URL: srv.URL + "/?k={{secret:K}}"},
		{URL: srv.URL, Header: map[string]string{"Authorization": "{{secret:K}}"}},
	} {
		_, err := toolkit.Do(ctx, req)
		if err == nil || !strings.Contains(err.Error(), "nothing was sent") {
			t.Errorf("%s %s: %v, want it refused", req.Method, req.URL, err)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("%d requests reached the server, want the HEAD alone", n)
	}
}

// TestSendRedirects: a GET follows redirects, dropping credentials on the
// way to another host; any other method gets the redirect itself, and is
// sent once.
func TestSendRedirects(t *testing.T) {
	var posts atomic.Int32
	var auth atomic.Value
	auth.Store("")
	other := server(t, func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Plain"))
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		fmt.Fprint(w, "landed")
	})
	target, _ := url.Parse(other.URL)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		// Another host: the same server by another name.
		http.Redirect(w, r, "http://localhost.test:"+target.Port()+"/", http.StatusTemporaryRedirect)
	})
	c := toolkit.NewClient(toolkit.Options{Policy: allowLoopback, Resolver: table{"localhost.test": {"127.0.0.1"}}})
	resp, err := c.Send(context.Background(), toolkit.Request{URL: srv.URL, Header: map[string]string{"Authorization": "Bearer k", "X-Plain": "p"}}, nil)
	if err != nil || resp.Body != "landed" {
		t.Fatalf("GET: %+v, %v", resp, err)
	}
	if got := auth.Load().(string); got != "|p" {
		t.Errorf("the other host got Authorization and X-Plain %q; want the credential dropped", got)
	}
	resp, err = c.Send(context.Background(), toolkit.Request{Method: "POST", URL: srv.URL, Body: "once"}, nil)
	if err != nil || resp.Status != http.StatusTemporaryRedirect || resp.Header["Location"] == "" {
		t.Fatalf("POST: %+v, %v; want the redirect itself", resp, err)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("the POST was sent %d times", n)
	}
	// A hop the caller refuses is not followed.
	_, err = c.Send(context.Background(), toolkit.Request{URL: srv.URL}, func(_, to *url.URL) error { return fmt.Errorf("not %s", to.Host) })
	if err == nil || !strings.Contains(err.Error(), "not localhost.test") {
		t.Errorf("refused hop: %v", err)
	}
}

// TestCheckRequest: a tool may not set what the server sets, nor send
// what is not HTTP.
func TestCheckRequest(t *testing.T) {
	for _, tt := range []struct {
		req  toolkit.Request
		want string
	}{
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"host": "b.example.org"}}, "header Host is set by the server"},
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"Content-Length": "1"}}, "header Content-Length is set by the server"},
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"Proxy-Foo": "1"}}, "header Proxy-Foo is set by the server"},
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"X-A": "1\r\nHost: b"}}, "line break"},
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"x-a": "1", "X-A": "2"}}, "given twice"},
		{toolkit.Request{Method: "GET", URL: "https://a.example.org/", Header: map[string]string{"Bad Name": "1"}}, "not a valid token"},
		{toolkit.Request{Method: "GE T", URL: "https://a.example.org/"}, "not a valid HTTP method"},
		{toolkit.Request{Method: "GET", URL: "ftp://a.example.org/"}, `scheme "ftp" is not allowed`},
		{toolkit.Request{Method: "GET", URL: "https:///x"}, "names no host"},
	} {
		if _, err := toolkit.CheckRequest(tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.req, err, tt.want)
		}
	}
	if _, err := toolkit.CheckRequest(toolkit.Request{Method: "PATCH", URL: "https://a.example.org/x?y=1", Header: map[string]string{"Authorization": "Bearer x", "Content-Type": "application/json"}}); err != nil {
		t.Error(err)
	}
}

func TestHostIn(t *testing.T) {
	hosts := []string{"api.example.org", "hooks.example.org:8443", "[::1]:9000"}
	for raw, want := range map[string]bool{
		"https://api.example.org/x":        true,
		"https://API.Example.org.:444/":    true,
		"https://hooks.example.org:8443/":  true,
		"https://hooks.example.org/":       false,
		"https://evil.api.example.org/":    false,
		"https://api.example.org.evil.io/": false,
		"http://[::1]:9000/":               true,
		"http://[::1]:9001/":               false,
	} {
		u, _ := url.Parse(raw)
		if got := toolkit.HostIn(hosts, u); got != want {
			t.Errorf("HostIn(%s) = %v, want %v", raw, got, want)
		}
	}
}

// A response's body crosses the worker's pipe as text: bytes that are not
// UTF-8 read the same wherever the tool runs.
func TestSendBodyIsText(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte{'a', 0xff, 'b'}) })
	c := toolkit.NewClient(toolkit.Options{Policy: allowLoopback})
	resp, err := c.Send(context.Background(), toolkit.Request{URL: srv.URL}, nil)
	if err != nil || resp.Body != "a\uFFFDb" {
		t.Errorf("body %q, %v", resp.Body, err)
	}
}
