package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Request is an HTTP request a tool asks the host to send. Method is GET
// when empty. A secret goes in the URL or in a header's value as its
// placeholder, {{secret:NAME}}: the host puts the value in, and only on
// its way to one of the secret's hosts; the tool never holds it.
type Request struct {
	Method string
	URL    string
	Header map[string]string
	Body   string
}

// Response is the answer to a Request: its status code, its headers (a
// header sent more than once has its values joined by ", "), and its
// body. A secret's value in it, plain or encoded, is masked.
type Response struct {
	Status int
	Header map[string]string
	Body   string
}

// Sender sends the requests of one tool call on the host. The host puts
// one in the context it passes to Execute (WithSender): in a worker
// process it forwards the request to the server over the worker's pipe;
// on the server it applies the egress policy, the tool's declared hosts,
// the caller's secrets and the caller's approval, then sends it.
type Sender interface {
	Send(ctx context.Context, req Request) (Response, error)
}

type senderKey struct{}

// WithSender returns a context whose Do, Get and their helpers go through
// s; a nil s leaves them to the Client of the context (WithClient), which
// sends GET and HEAD requests only.
func WithSender(ctx context.Context, s Sender) context.Context {
	return context.WithValue(ctx, senderKey{}, s)
}

// SenderFrom returns the Sender of ctx, or nil when ctx carries none.
func SenderFrom(ctx context.Context) Sender {
	s, _ := ctx.Value(senderKey{}).(Sender)
	return s
}

// Do sends req through the host and returns the answer, whatever its
// status. The host sends it under the egress policy, its size and time
// caps, the tool's declared hosts (`const Hosts`), with the caller's
// secrets put in place of their placeholders and, for a method other than
// GET and HEAD, once the person behind the request has approved it. A
// refusal, a denial or an expiry is an error that says so; nothing was
// sent then. Redirects of GET and HEAD are followed, each checked like the
// first request; those of other methods come back as they are, since an
// approved request is never sent twice.
func Do(ctx context.Context, req Request) (Response, error) {
	req.Method = strings.ToUpper(strings.TrimSpace(req.Method))
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	where := req.Method + " " + redact(req.URL)
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("%s: %w", where, err)
	}
	s := SenderFrom(ctx)
	if s == nil {
		s = ReadOnly(from(ctx), nil)
	}
	resp, err := s.Send(ctx, req)
	if err != nil {
		return Response{}, fmt.Errorf("%s: %w", where, err)
	}
	return resp, nil
}

// PostJSON sends body, encoded as JSON, to rawURL with POST and the
// headers header (Content-Type is application/json unless header says
// otherwise), as Do does. It fails on a status outside 2xx, with the
// status and the start of the answer.
func PostJSON(ctx context.Context, rawURL string, header map[string]string, body any) (Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("POST %s: encode JSON: %w", redact(rawURL), err)
	}
	h := map[string]string{}
	for k, v := range header {
		h[k] = v
	}
	if !hasHeader(h, "Content-Type") {
		h["Content-Type"] = "application/json"
	}
	resp, err := Do(ctx, Request{Method: http.MethodPost, URL: rawURL, Header: h, Body: string(b)})
	if err != nil {
		return resp, err
	}
	if resp.Status/100 != 2 {
		return resp, fmt.Errorf("POST %s: status %s: %s", redact(rawURL), statusText(resp.Status), snippet([]byte(resp.Body)))
	}
	return resp, nil
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// SecretPrefix starts a secret's placeholder, {{secret:NAME}}.
const SecretPrefix = "{{secret:"

// ReadOnly returns the Sender of a host that serves a tool no more than
// what needs nobody's approval nor any secret: GET and HEAD requests, sent
// through c. hosts, when not empty, are the tool's declared hosts, the
// only ones it may reach. It is what a tool gets where no server serves
// its requests (a runner used on its own, a differential check): anything
// else is refused with an error that says why.
func ReadOnly(c *Client, hosts []string) Sender { return readOnly{c: c, hosts: hosts} }

type readOnly struct {
	c     *Client
	hosts []string
}

func (r readOnly) Send(ctx context.Context, req Request) (Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return Response{}, fmt.Errorf("a %s request needs the approval of the person asking, and none can be asked here: only GET and HEAD requests are sent; nothing was sent", req.Method)
	}
	if strings.Contains(req.URL, SecretPrefix) || strings.Contains(req.Body, SecretPrefix) {
		return Response{}, errors.New("secrets ({{secret:NAME}}) are not served here; nothing was sent")
	}
	for k, v := range req.Header {
		if strings.Contains(k+v, SecretPrefix) {
			return Response{}, errors.New("secrets ({{secret:NAME}}) are not served here; nothing was sent")
		}
	}
	check := func(u *url.URL) error {
		if len(r.hosts) > 0 && !HostIn(r.hosts, u) {
			return fmt.Errorf("%s is not among the hosts the tool declares (%s); nothing was sent", u.Hostname(), strings.Join(r.hosts, ", "))
		}
		return nil
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return Response{}, fmt.Errorf("bad URL: %w", err)
	}
	if err := check(u); err != nil {
		return Response{}, err
	}
	return r.c.Send(ctx, req, func(_, to *url.URL) error { return check(to) })
}

// HostIn reports whether u's host is one of hosts: an entry "host" matches
// the host name on any port, an entry "host:port" that port alone. Names
// compare without regard to case and a trailing dot.
func HostIn(hosts []string, u *url.URL) bool {
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		hn, hp := h, ""
		if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
			hn, hp = h[:i], h[i+1:]
		}
		hn = strings.TrimSuffix(strings.Trim(hn, "[]"), ".")
		if hn == name && (hp == "" || hp == port) {
			return true
		}
	}
	return false
}

type pauseKey struct{}

// WithPause returns a context whose Pause calls pause. A runner of tool
// calls puts one in the context of the requests a call makes, so that the
// time a person takes to answer an approval does not count against the
// call's time limit, nor against its callers'.
func WithPause(ctx context.Context, pause func() (resume func())) context.Context {
	return context.WithValue(ctx, pauseKey{}, pause)
}

// Pause stops the time limit of the tool call whose request ctx carries,
// and of the calls waiting for it, until the returned function is called;
// without such a call it does nothing.
func Pause(ctx context.Context) (resume func()) {
	if p, ok := ctx.Value(pauseKey{}).(func() func()); ok && p != nil {
		return p()
	}
	return func() {}
}
