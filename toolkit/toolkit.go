// Package toolkit is the host package for tools: the few capabilities a tool may
// use beyond pure computation, each bounded by the host. Tools import it as
// "adaptbot/toolkit".
//
// Tools see only Do, PostJSON, Get, GetJSON, QueryEscape, Request,
// Response, ErrBlocked, Call and CallJSON (the sandbox exports nothing
// else). Every request a tool makes is sent by the host, never by the
// tool's own process: how it is sent — the egress policy, the size and
// time caps, in tests a rewrite of hosts to a local server, the tool's
// declared hosts, the caller's secrets and approvals — and who runs the
// tools a tool calls are set by the host through the context it passes to
// Execute (WithClient, WithSender, WithCaller), which tools cannot forge.
package toolkit

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Defaults for a Client made without options.
const (
	DefaultMaxBytes  = 1 << 20
	DefaultTimeout   = 10 * time.Second
	DefaultRedirects = 5
)

// Options configures a Client.
type Options struct {
	// Policy decides which destinations may be reached.
	Policy Policy
	// MaxBytes caps a response body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Timeout caps one request, redirects included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Rewrite maps a host name to a base URL ("http://127.0.0.1:8080") that is
	// used instead. It exists for tests that serve canned answers on loopback.
	Rewrite map[string]string
	// Resolver looks host names up; nil is the system's (net.DefaultResolver).
	// Tests give one that answers from a table; it stays in the process that
	// set it (worker processes always use the system's).
	Resolver Resolver `json:"-"`
	// TLS, when set, configures TLS (tests trust their own server's
	// certificate with it); nil is the system's roots.
	TLS *tls.Config `json:"-"`
}

// Resolver looks up the addresses of a host name, as net.Resolver does.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Client performs HTTP requests on behalf of tools.
type Client struct {
	opts Options
	http *http.Client
}

// NewClient returns a Client that enforces opts.Policy on every connection it
// makes, redirects included: the host name is resolved once per connection and
// the address actually dialled is the one that was checked. Its requests
// run on the host (Send); tools reach it only through their Sender.
func NewClient(opts Options) *Client {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	c := &Client{opts: opts}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf, past the policy
		DialContext:           c.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		TLSClientConfig:       opts.TLS,
	}
	c.http = &http.Client{
		Transport: transport,
		// Send follows redirects itself, checking each hop.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Policy returns the egress policy c enforces.
func (c *Client) Policy() Policy { return c.opts.Policy }

// MaxBytes returns the cap on a request's and a response's body.
func (c *Client) MaxBytes() int64 { return c.opts.MaxBytes }

// ErrBlocked is returned (wrapped) when the egress policy refuses a destination.
var ErrBlocked = errors.New("blocked by the egress policy")

func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		var r Resolver = net.DefaultResolver
		if c.opts.Resolver != nil {
			r = c.opts.Resolver
		}
		ips, err = r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
	}
	var d net.Dialer
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap()
		if err := c.opts.Policy.Check(host, ip); err != nil {
			return nil, err
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no address for %s", host)
	}
	return nil, lastErr
}

func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q is not allowed: use http or https", u.Scheme)
	}
	return nil
}

type clientKey struct{}

// WithClient returns a context whose requests go through c where no Sender
// serves them (WithSender): GET and HEAD only, as ReadOnly sends them.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

var defaultClient = NewClient(Options{})

func from(ctx context.Context) *Client {
	if c, ok := ctx.Value(clientKey{}).(*Client); ok && c != nil {
		return c
	}
	return defaultClient
}

// Get fetches rawURL with an HTTP GET and returns the body. It fails on a
// status outside 2xx, on a body over the size cap, and on a destination the
// egress policy refuses. It is Do with GET: the host sends it.
func Get(ctx context.Context, rawURL string) (string, error) {
	b, err := get(ctx, rawURL)
	return string(b), err
}

// GetJSON fetches rawURL and decodes its JSON body into v.
func GetJSON(ctx context.Context, rawURL string, v any) error {
	b, err := get(ctx, rawURL)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: decode JSON: %w", redact(rawURL), err)
	}
	return nil
}

// QueryEscape escapes s for use in a URL query.
func QueryEscape(s string) string { return url.QueryEscape(s) }

func get(ctx context.Context, rawURL string) ([]byte, error) {
	resp, err := Do(ctx, Request{Method: http.MethodGet, URL: rawURL})
	if err != nil {
		return nil, err
	}
	if resp.Status/100 != 2 {
		return nil, fmt.Errorf("GET %s: status %s: %s", redact(rawURL), statusText(resp.Status), snippet([]byte(resp.Body)))
	}
	return []byte(resp.Body), nil
}

// serverSet are the headers the host sets itself, or that belong to the
// connection: a tool may not set them. Host in particular would send a
// request for one site, its secrets included, to another behind the same
// address.
var serverSet = map[string]bool{
	"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
}

// CheckRequest reports what is wrong with req as a request to send: a
// method or a header that is not a valid token, a header value with a line
// break, a header the host sets itself, the same header twice, a URL that
// is not http or https.
func CheckRequest(req Request) (*url.URL, error) {
	if !token(req.Method) {
		return nil, fmt.Errorf("method %q is not a valid HTTP method", req.Method)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %w", err)
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, fmt.Errorf("URL %q names no host", redact(req.URL))
	}
	seen := map[string]bool{}
	for k, v := range req.Header {
		if !token(k) {
			return nil, fmt.Errorf("header name %q is not a valid token", k)
		}
		ck := http.CanonicalHeaderKey(k)
		if serverSet[ck] || strings.HasPrefix(ck, "Proxy-") {
			return nil, fmt.Errorf("header %s is set by the server; a tool may not set it; nothing was sent", ck)
		}
		if seen[ck] {
			return nil, fmt.Errorf("header %s is given twice (names are not case-sensitive)", ck)
		}
		seen[ck] = true
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("header %s holds a line break or a NUL", ck)
		}
	}
	return u, nil
}

func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// Send makes req on the host: under c's egress policy (checked at every
// connection), its size cap (on the request's body and the answer's) and
// its time cap (redirects included). It follows the redirects of GET and
// HEAD, at most DefaultRedirects, asking hop of each before it goes (nil:
// any the policy admits); those of other methods come back as they are.
// Headers that carry credentials (Authorization, Cookie) do not follow a
// redirect to another host. The error says why, without the request's
// method and URL.
func (c *Client) Send(ctx context.Context, req Request, hop func(from, to *url.URL) error) (Response, error) {
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	u, err := CheckRequest(req)
	if err != nil {
		return Response{}, err
	}
	if int64(len(req.Body)) > c.opts.MaxBytes {
		return Response{}, fmt.Errorf("the request body is larger than the %d-byte cap", c.opts.MaxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	method, body, header := req.Method, req.Body, req.Header
	follow := method == http.MethodGet || method == http.MethodHead
	for hops := 0; ; hops++ {
		resp, err := c.exchange(ctx, method, u, header, body)
		if err != nil {
			return Response{}, err
		}
		loc := resp.Header.Get("Location")
		if !follow || loc == "" || !redirect(resp.StatusCode) {
			return c.read(resp)
		}
		resp.Body.Close()
		if hops >= DefaultRedirects {
			return Response{}, fmt.Errorf("stopped after %d redirects", DefaultRedirects)
		}
		next, err := u.Parse(loc)
		if err != nil {
			return Response{}, fmt.Errorf("redirect to a bad URL: %w", err)
		}
		if err := checkScheme(next); err != nil {
			return Response{}, err
		}
		if hop != nil {
			if err := hop(u, next); err != nil {
				return Response{}, err
			}
		}
		if !strings.EqualFold(next.Hostname(), u.Hostname()) {
			header = withoutCredentials(header)
		}
		u = next
	}
}

func redirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func withoutCredentials(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "Www-Authenticate", "Cookie", "Cookie2":
			continue
		}
		out[k] = v
	}
	return out
}

// exchange sends one request to u (or where Rewrite sends its host).
func (c *Client) exchange(ctx context.Context, method string, u *url.URL, header map[string]string, body string) (*http.Response, error) {
	wire := *u
	if base, ok := c.opts.Rewrite[u.Hostname()]; ok {
		b, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("rewrite %s: %w", u.Host, err)
		}
		wire.Scheme, wire.Host = b.Scheme, b.Host
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, wire.String(), rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "AdaptBot-tool/1.0")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	return resp, nil
}

// read reads an answer within the size cap.
func (c *Client) read(resp *http.Response) (Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBytes+1))
	if err != nil {
		return Response{}, fmt.Errorf("read body: %w", err)
	}
	if int64(len(body)) > c.opts.MaxBytes {
		return Response{}, fmt.Errorf("response is larger than the %d-byte cap", c.opts.MaxBytes)
	}
	// A body crosses the worker's pipe as JSON text: bytes that are not
	// UTF-8 read the same in every runner.
	out := Response{Status: resp.StatusCode, Header: make(map[string]string, len(resp.Header)), Body: strings.ToValidUTF8(string(body), "\uFFFD")}
	for k, vs := range resp.Header {
		out.Header[k] = strings.Join(vs, ", ")
	}
	return out, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact drops the query string, which may carry keys, from URLs in errors.
func redact(rawURL string) string {
	if i := strings.IndexByte(rawURL, '?'); i >= 0 {
		return rawURL[:i] + "?…"
	}
	return rawURL
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
