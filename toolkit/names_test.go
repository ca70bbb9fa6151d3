package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"adaptbot/toolkit"
)

// table is a resolver that answers from a map, as DNS would for a name an
// attacker controls.
type table map[string][]string

func (tb table) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := tb[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

var _ toolkit.Resolver = table(nil)

// port is the test server's port.
func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestGetLocalhostIsRefused: the name localhost, resolved by the system,
// is loopback and refused like 127.0.0.1.
func TestGetLocalhostIsRefused(t *testing.T) {
	hit := false
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { hit = true })
	for _, host := range []string{"localhost", "LOCALHOST"} {
		_, err := get(toolkit.Options{}, "http://"+host+":"+port(t, srv.URL)+"/")
		if !errors.Is(err, toolkit.ErrBlocked) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("GET http://%s: %v, want it blocked as loopback", host, err)
		}
	}
	if hit {
		t.Error("the refused server was reached")
	}
}

// TestGetNameResolvingInsideIsRefused: a public-looking name that resolves
// to a loopback, private, link-local or unspecified address is refused by
// that address, before anything is sent; one that resolves to a public
// address is not refused by the policy.
func TestGetNameResolvingInsideIsRefused(t *testing.T) {
	hit := false
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { hit = true })
	p := port(t, srv.URL)
	resolver := table{
		"loop.example":     {"127.0.0.1"},
		"loop6.example":    {"::1"},
		"mapped.example":   {"::ffff:127.0.0.1"},
		"private.example":  {"10.1.2.3"},
		"home.example":     {"192.168.1.1"},
		"metadata.example": {"169.254.169.254"},
		"zero.example":     {"0.0.0.0"},
		"mixed.example":    {"127.0.0.1", "93.184.215.14"},
	}
	for host, addrs := range resolver {
		_, err := get(toolkit.Options{Resolver: resolver}, "http://"+host+":"+p+"/")
		if !errors.Is(err, toolkit.ErrBlocked) {
			t.Errorf("GET %s (%v): %v, want ErrBlocked", host, addrs, err)
			continue
		}
		if !strings.Contains(err.Error(), host) {
			t.Errorf("GET %s: %q does not name the host", host, err)
		}
	}
	if hit {
		t.Error("a refused name reached the server")
	}
	// The resolver is the one that answered: a name it does not know fails
	// to resolve, rather than being refused.
	if _, err := get(toolkit.Options{Resolver: resolver}, "http://unknown.example/"); err == nil || errors.Is(err, toolkit.ErrBlocked) || !strings.Contains(err.Error(), "no such host") {
		t.Errorf("GET unknown.example: %v, want a resolution error", err)
	}
}

// TestGetAllowedNameResolvingInside: a host named in the allowlist is
// reached whatever it resolves to, and only that host.
func TestGetAllowedNameResolvingInside(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "inside") })
	p := port(t, srv.URL)
	resolver := table{"svc.internal": {"127.0.0.1"}, "other.internal": {"127.0.0.1"}}
	opts := toolkit.Options{Resolver: resolver, Policy: toolkit.Policy{AllowHosts: []string{"svc.internal"}}}
	if body, err := get(opts, "http://svc.internal:"+p+"/"); err != nil || body != "inside" {
		t.Errorf("allowed name: %q, %v", body, err)
	}
	if _, err := get(opts, "http://other.internal:"+p+"/"); !errors.Is(err, toolkit.ErrBlocked) {
		t.Errorf("a name not allowed, at the same address: %v, want ErrBlocked", err)
	}
}

// TestGetRedirectToNameResolvingInside: a redirect from an allowed server to
// a name that resolves inside is checked by that name's address, like the
// first request.
func TestGetRedirectToNameResolvingInside(t *testing.T) {
	reached := map[string]bool{}
	var srvURL string
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/start" {
			reached[r.Host] = true
			return
		}
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	srvURL = srv.URL
	p := port(t, srvURL)
	resolver := table{
		"api.example":      {"127.0.0.1"}, // the allowed server
		"localhost":        {"127.0.0.1", "::1"},
		"private.example":  {"10.0.0.7"},
		"loop.example":     {"127.0.0.1"}, // the same address, but not an allowed name
		"metadata.example": {"169.254.169.254"},
	}
	opts := toolkit.Options{Resolver: resolver, Policy: toolkit.Policy{AllowHosts: []string{"api.example"}}}
	for _, target := range []string{
		"http://localhost:" + p + "/secret",
		"http://loop.example:" + p + "/secret",
		"http://private.example:" + p + "/secret",
		"http://metadata.example/latest/meta-data/",
	} {
		_, err := get(opts, "http://api.example:"+p+"/start?to="+url.QueryEscape(target))
		if !errors.Is(err, toolkit.ErrBlocked) {
			t.Errorf("redirect to %s: %v, want ErrBlocked", target, err)
		}
	}
	if len(reached) > 0 {
		t.Errorf("a redirect reached %v", reached)
	}
	// The allowed server itself answers through its name.
	if _, err := get(opts, "http://api.example:"+p+"/ok"); err != nil || !reached["api.example:"+p] {
		t.Errorf("the allowed name: %v (reached %v)", err, reached)
	}
}
