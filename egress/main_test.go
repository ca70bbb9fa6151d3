package egress_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/approval"
	"adaptbot/contract"
	"adaptbot/egress"
	"adaptbot/identity"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
	"adaptbot/secrets"
	"adaptbot/toolkit"
)

// workerEnv makes the test binary a sandbox worker: the pools of these
// tests start this same binary, so that tools run as they do in a server,
// in a process of their own.
const workerEnv = "ADAPTBOT_EGRESS_TEST_WORKER"

func TestMain(m *testing.M) {
	sandboxtest.ServeWorkerIf(workerEnv)
	os.Exit(m.Run())
}

// The people of the tests.
var (
	alice = identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	bob   = identity.Identity{Name: "bob", Role: identity.User, Pseudonym: "u-bob", Method: identity.Key}
	carol = identity.Identity{Name: "carol", Role: identity.User, Pseudonym: "u-carol", Method: identity.Key}
	admin = identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "u-root", Method: identity.Key}
)

// seen is one request a test server received.
type seen struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// site is a loopback HTTPS server for one host name: it records what
// reaches it and answers with handle (or 200 "ok").
type site struct {
	host string
	srv  *httptest.Server
	mu   sync.Mutex
	got  []seen
}

func (s *site) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// base is the site's URL by its host name: https://NAME:PORT.
func (s *site) base() string {
	return fmt.Sprintf("https://%s:%d", s.host, s.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// world is what the tests run tools in: sites, a client that reaches them
// by name (a resolver maps every *.example.com to loopback), a secrets
// store, an approvals broker, the egress host and a pool of workers.
type world struct {
	sites   map[string]*site
	client  *toolkit.Client
	store   *secrets.Store
	broker  *approval.Broker
	host    *egress.Host
	pool    *sandbox.Pool
	mu      sync.Mutex
	events  []egress.Event
	records []approval.Record
}

type resolver struct{}

func (resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".example.com") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// newWorld starts the sites named (hooks, evil, ...: HOST.example.com);
// handle, when set for a host, answers its requests.
func newWorld(t testing.TB, handle map[string]http.HandlerFunc, names ...string) *world {
	t.Helper()
	w := &world{sites: map[string]*site{}}
	roots := x509.NewCertPool()
	for _, n := range names {
		s := &site{host: n + ".example.com"}
		h := handle[n]
		s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.got = append(s.got, seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body), Header: r.Header.Clone()})
			s.mu.Unlock()
			if h != nil {
				h(rw, r)
				return
			}
			fmt.Fprint(rw, "ok")
		}))
		s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		s.srv.StartTLS()
		t.Cleanup(s.srv.Close)
		roots.AddCert(s.srv.Certificate())
		w.sites[n] = s
	}
	w.client = toolkit.NewClient(toolkit.Options{
		Policy:   toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: resolver{},
		TLS:      &tls.Config{RootCAs: roots},
		Timeout:  5 * time.Second,
	})
	var err error
	w.store, err = secrets.Open(&secrets.MemoryBackend{}, []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	w.broker = approval.New(approval.Options{Timeout: 2 * time.Second, OnDecision: func(_ context.Context, r approval.Record) {
		w.mu.Lock()
		w.records = append(w.records, r)
		w.mu.Unlock()
	}})
	w.host = egress.New(egress.Options{Client: w.client, Secrets: w.store, Approvals: w.broker, Observe: func(_ context.Context, e egress.Event) {
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
	}})
	return w
}

// workers gives w a pool of worker processes, which the tools run in.
func (w *world) workers(t testing.TB) *world {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w.pool, err = sandbox.NewPool(sandbox.Options{
		PoolSize: 1, CallTimeout: 5 * time.Second, MemoryLimit: 256 << 20, MaxGoroutines: 200,
		WorkerCommand: []string{exe}, WorkerEnv: []string{workerEnv + "=1"},
		Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.pool.Close() })
	return w
}

// set keeps a secret for who.
func (w *world) set(t testing.TB, who identity.Identity, name, value string, shared bool, hosts ...string) {
	t.Helper()
	if _, err := w.store.Set(identity.With(context.Background(), who), name, value, hosts, shared); err != nil {
		t.Fatal(err)
	}
}

// tool is a tool's source with its name, as the server knows it.
type tool struct {
	name string
	src  string
	ver  int
}

func (tl tool) egress(t testing.TB) egress.Tool {
	t.Helper()
	spec, err := contract.Parse(tl.name, []byte(tl.src))
	if err != nil {
		t.Fatalf("%s: %v", tl.name, err)
	}
	v := tl.ver
	if v == 0 {
		v = 1
	}
	return egress.Tool{Name: tl.name, Version: v, SHA256: sandbox.Digest(tl.name, []byte(tl.src)), Hosts: spec.Hosts}
}

// run runs tl in a worker for who, asked through asker (nil: none), with
// input; it returns the output or the error's words.
func (w *world) run(t testing.TB, tl tool, who identity.Identity, asker approval.Asker, input string) (string, error) {
	t.Helper()
	ctx := identity.With(context.Background(), who)
	if asker != nil {
		ctx = approval.WithAsker(ctx, asker, "chat-1")
	}
	ctx = egress.Bind(ctx, w.host, tl.egress(t))
	res, err := w.pool.Run(ctx, sandbox.Call{Tool: tl.name, Source: []byte(tl.src), Input: []byte(input)})
	return res.Output, err
}

// fetcher sends what its input says and returns what came back, or the
// error's words: the hostile tools of these tests are fetcher with hosts
// of their own.
func fetcher(name, hosts string) tool {
	decl := ""
	if hosts != "" {
		decl = fmt.Sprintf("const Hosts = %q\n", hosts)
	}
	return tool{name: name, src: `// Package ` + name + ` sends a request and says what came back.
package ` + name + `

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"adaptbot/toolkit"
)

` + decl + `
type Input struct {
	Method string            ` + "`json:\"method\"`" + `
	URL    string            ` + "`json:\"url\"`" + `
	Header map[string]string ` + "`json:\"header\"`" + `
	Body   string            ` + "`json:\"body\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.Do(ctx, toolkit.Request{Method: in.Method, URL: in.URL, Header: in.Header, Body: in.Body})
	if err != nil {
		return "error: " + err.Error(), nil
	}
	var keys []string
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n", resp.Status)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, resp.Header[k])
	}
	b.WriteString(resp.Body)
	return b.String(), nil
}
`}
}

// input is a fetcher's input.
func input(method, rawURL string, header map[string]string, body string) string {
	var h strings.Builder
	h.WriteString("{")
	first := true
	for k, v := range header {
		if !first {
			h.WriteString(",")
		}
		first = false
		fmt.Fprintf(&h, "%q:%q", k, v)
	}
	h.WriteString("}")
	return fmt.Sprintf(`{"method":%q,"url":%q,"header":%s,"body":%q}`, method, rawURL, h.String(), body)
}

// escapes lists the forms of a value an answer might echo it in.
func escapes(v string) []string {
	return []string{v, url.QueryEscape(v), url.PathEscape(v)}
}

// egressBind binds ctx to tl's requests through w's host.
func egressBind(t testing.TB, w *world, ctx context.Context, tl tool) context.Context {
	t.Helper()
	return egress.Bind(ctx, w.host, tl.egress(t))
}

// trustOf is an admin's trust of a tool version for host.
func trustOf(tool string, version int, sha, host string) secrets.Trust {
	return secrets.Trust{Tool: tool, Version: version, SHA256: sha, Host: host}
}
