// Package toolkit is the host package for tools: the few capabilities a tool may
// use beyond pure computation, each bounded by the host. Tools import it as
// "adaptbot/toolkit".
//
// Tools see only Get, GetJSON, QueryEscape, ErrBlocked, Call and CallJSON (the
// sandbox exports nothing else). How those calls behave — the egress policy,
// the size and time caps, in tests a rewrite of hosts to a local server, and
// who runs the tools a tool calls — is set by the host through the context it
// passes to Execute (WithClient, WithCaller), which tools cannot forge.
package toolkit

import (
	"context"
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
// the address actually dialled is the one that was checked.
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
	}
	c.http = &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= DefaultRedirects {
				return fmt.Errorf("stopped after %d redirects", DefaultRedirects)
			}
			return checkScheme(req.URL)
		},
	}
	return c
}

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

// WithClient returns a context whose toolkit calls go through c.
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
// egress policy refuses.
func Get(ctx context.Context, rawURL string) (string, error) {
	b, err := from(ctx).get(ctx, rawURL)
	return string(b), err
}

// GetJSON fetches rawURL and decodes its JSON body into v.
func GetJSON(ctx context.Context, rawURL string, v any) error {
	b, err := from(ctx).get(ctx, rawURL)
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

func (c *Client) get(ctx context.Context, rawURL string) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %w", err)
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	if base, ok := c.opts.Rewrite[u.Hostname()]; ok {
		b, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("rewrite %s: %w", u.Host, err)
		}
		u.Scheme, u.Host = b.Scheme, b.Host
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "AdaptBot-tool/1.0")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact(rawURL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: read body: %w", redact(rawURL), err)
	}
	if int64(len(body)) > c.opts.MaxBytes {
		return nil, fmt.Errorf("GET %s: response is larger than the %d-byte cap", redact(rawURL), c.opts.MaxBytes)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: status %s: %s", redact(rawURL), resp.Status, snippet(body))
	}
	return body, nil
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
