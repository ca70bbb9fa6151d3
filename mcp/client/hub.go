package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
)

// Protocol is the protocol version the hub asks servers for: the
// newest one of the initialize handshake, which every server in use speaks.
const Protocol = "2025-11-25"

// Options configures a Hub. The zero value is usable.
type Options struct {
	// Timeout bounds connecting to one server and listing its tools;
	// 0 means config.DefaultTimeout. A server's own Timeout overrides it.
	Timeout time.Duration
	// Env is the environment stdio servers start from, before their own
	// "env"; nil means DefaultEnv(os.Getenv).
	Env []string
	// Version is the client version reported to servers; default "dev".
	Version string
	// Log receives connection events and servers' failures; nil discards.
	Log *slog.Logger
}

// ServerError is one server's failure: it names the server and says why.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string { return "server " + e.Server + ": " + e.Err.Error() }

func (e *ServerError) Unwrap() error { return e.Err }

// MarshalJSON writes {"server": ..., "error": ...}.
func (e *ServerError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Server string `json:"server"`
		Error  string `json:"error"`
	}{e.Server, e.Err.Error()})
}

// Hub holds the connections to the configured external servers. Servers
// are connected lazily (by Connect, List or Call) and in parallel, each
// within its own time limit; a server that fails, hangs or exits never
// holds up the others. It is safe for concurrent use.
type Hub struct {
	opts   Options
	conns  []*conn // in configuration order
	byName map[string]*conn
	closed atomic.Bool
	// stopping counts stdio servers being stopped after a failed connect,
	// so that Close can wait for them and leave no process behind; stopMu
	// orders those Adds before Close's Wait.
	stopMu   sync.Mutex
	stopping sync.WaitGroup

	listenMu  sync.RWMutex
	listeners []func(server string, specs []toolbox.Spec)
}

// OnChange registers fn, called with a server's name and its whole new list
// of tools each time that list changed (the server connected, reconnected,
// or announced list_changed). Calls for one server come in order; fn must
// not block for long.
func (h *Hub) OnChange(fn func(server string, specs []toolbox.Spec)) {
	h.listenMu.Lock()
	h.listeners = append(h.listeners, fn)
	h.listenMu.Unlock()
}

// Specs returns every server's tools as last listed, as toolbox specs:
// named "server/tool", with their server as their domain.
func (h *Hub) Specs() []toolbox.Spec {
	tools := h.Tools()
	out := make([]toolbox.Spec, len(tools))
	for i, t := range tools {
		out[i] = t.Spec()
	}
	return out
}

// later runs stop (stopping a process or closing a session, which stops its
// process) without making the caller wait, unless the hub is closing, when
// it runs it now. Close waits for it either way, so that no server process
// (nor any process of its group) outlives the hub.
func (h *Hub) later(stop func()) {
	h.stopMu.Lock()
	if h.closed.Load() {
		h.stopMu.Unlock()
		stop()
		return
	}
	h.stopping.Add(1)
	h.stopMu.Unlock()
	go func() {
		defer h.stopping.Done()
		stop()
	}()
}

// closeLater closes s in the background: a hung server can hold a graceful
// close for seconds.
func (h *Hub) closeLater(s *sdk.ClientSession) { h.later(func() { s.Close() }) }

// NewHub returns a Hub for the enabled servers among servers. It connects
// to nothing yet.
func NewHub(servers []config.Server, opts Options) *Hub {
	if opts.Timeout <= 0 {
		opts.Timeout = config.DefaultTimeout
	}
	if opts.Env == nil {
		opts.Env = DefaultEnv(nil)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{opts: opts, byName: map[string]*conn{}}
	for _, s := range servers {
		if s.Disabled {
			continue
		}
		c := &conn{hub: h, cfg: s}
		h.conns = append(h.conns, c)
		h.byName[s.Name] = c
	}
	return h
}

// Servers returns the names of the hub's servers, in configuration order.
func (h *Hub) Servers() []string {
	out := make([]string, len(h.conns))
	for i, c := range h.conns {
		out[i] = c.cfg.Name
	}
	return out
}

// Connect connects every server not yet connected, in parallel, and lists
// its tools. It returns one error per server that failed, in configuration
// order; the others are usable whatever happened to those.
func (h *Hub) Connect(ctx context.Context) []*ServerError {
	_, errs := h.List(ctx)
	return errs
}

// List connects the named servers (all of them if none is named) that are
// not connected yet and returns their tools, sorted by server then name,
// with one error per server that failed. A name the hub does not know is
// an error too.
func (h *Hub) List(ctx context.Context, only ...string) ([]Tool, []*ServerError) {
	conns := h.conns
	var errs []*ServerError
	if len(only) > 0 {
		conns = nil
		for _, name := range only {
			c, ok := h.byName[name]
			if !ok {
				errs = append(errs, &ServerError{Server: name, Err: fmt.Errorf("not in the configuration (servers: %s)", strings.Join(h.Servers(), ", "))})
				continue
			}
			conns = append(conns, c)
		}
	}
	failed := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_, _, failed[i] = c.ensure(ctx)
		})
	}
	wg.Wait()
	var tools []Tool
	for i, c := range conns {
		if failed[i] != nil {
			errs = append(errs, &ServerError{Server: c.cfg.Name, Err: failed[i]})
			continue
		}
		tools = append(tools, c.snapshot()...)
	}
	sortTools(tools)
	return tools, errs
}

// Tools returns the tools of every server as last listed, without
// connecting to anything.
func (h *Hub) Tools() []Tool {
	var out []Tool
	for _, c := range h.conns {
		out = append(out, c.snapshot()...)
	}
	sortTools(out)
	return out
}

// Description returns what server said it is for (its configured
// description, or its instructions or title when it connected), or "".
func (h *Hub) Description(server string) string {
	c, ok := h.byName[server]
	if !ok {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.desc
}

// Tool returns the tool called name on server, as last listed.
func (h *Hub) Tool(server, name string) (Tool, bool) {
	c, ok := h.byName[server]
	if !ok {
		return Tool{}, false
	}
	return c.tool(name)
}

// Call calls tool on server with args, a JSON object. It sends args as
// they are: callers go through the toolbox, which validates them first. A
// tool that reports an error (isError) returns it as the error.
//
// A call is never sent twice: tools have side effects. If the session turns
// out to be dead before the request went out (the server exited or
// restarted, and the SDK or the transport refused to send), the hub
// reconnects once and sends it then. If the connection is lost after the
// request may have gone out, the call fails with an error that says it may
// or may not have run, and the next call reconnects.
func (h *Hub) Call(ctx context.Context, server, tool string, args json.RawMessage) (string, error) {
	c, ok := h.byName[server]
	if !ok {
		return "", fmt.Errorf("no MCP server named %q (servers: %s)", server, strings.Join(h.Servers(), ", "))
	}
	id := server + "/" + tool
	if _, ok := c.tool(tool); !ok {
		// Not listed yet, or listed before it existed: list now.
		if _, _, err := c.ensure(ctx); err != nil {
			return "", fmt.Errorf("%s: %w", id, err)
		}
		c.relist(ctx)
		if _, ok := c.tool(tool); !ok {
			return "", fmt.Errorf("server %s has no tool %q", server, tool)
		}
	}
	for attempt := 0; ; attempt++ {
		s, gen, err := c.ensure(ctx)
		if err != nil {
			return "", fmt.Errorf("%s: %w", id, err)
		}
		mark := &callMark{}
		res, err := s.CallTool(withCallMark(ctx, mark), &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("%s: %w", id, err)
			}
			switch {
			case undelivered(err, mark):
				c.drop(gen)
				if attempt == 0 {
					h.opts.Log.Info("mcp: session lost before the call was sent; reconnecting once", "server", server, "tool", tool, "err", err)
					continue
				}
				return "", fmt.Errorf("%s: not sent, so it did not run: the connection to server %s was lost again after reconnecting: %w", id, server, err)
			case connectionLost(err) || c.ended(gen):
				// The server may have run it before the connection broke:
				// sending it again could run it twice.
				c.drop(gen)
				h.opts.Log.Warn("mcp: session lost during a call; not retried", "server", server, "tool", tool, "err", err)
				return "", fmt.Errorf("%s: the connection to server %s was lost during the call, so the call may or may not have run; it was not sent again, since running it twice could repeat its effects (the next call reconnects): %w", id, server, err)
			}
			return "", fmt.Errorf("%s: %w", id, err)
		}
		out := resultText(res)
		if res.IsError {
			if out == "" {
				out = "the tool reported an error without a message"
			}
			return "", fmt.Errorf("%s: %s", id, out)
		}
		return out, nil
	}
}

// Close ends every session and stops every stdio server, in parallel. A
// connection still being made is closed as soon as it is made.
func (h *Hub) Close() error {
	h.stopMu.Lock()
	h.closed.Store(true)
	h.stopMu.Unlock()
	errs := make([]error, len(h.conns))
	var wg sync.WaitGroup
	for i, c := range h.conns {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	h.stopping.Wait()
	return errors.Join(errs...)
}

// resultText renders a call's result as text. Structured content, when the
// server sent it, is the result: its JSON, exactly as the tool's output
// schema describes it (the text content beside it is a copy for clients
// that predate structured results, which may be shortened or reworded).
// Otherwise text as is, and other content as a short note.
func resultText(res *sdk.CallToolResult) string {
	if !res.IsError && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil && string(b) != "null" {
			return string(b)
		}
	}
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// conn is one server: its configuration, its session and its tools.
type conn struct {
	hub *Hub
	cfg config.Server

	dial sync.Mutex // held while connecting, so one connect runs at a time
	emit sync.Mutex // held while setting the tools and telling listeners

	mu      sync.Mutex
	session *sdk.ClientSession
	gen     uint64 // numbers sessions, so a stale failure drops nothing new
	dead    bool   // the session ended
	desc    string
	tools   []Tool // sorted by name

	refresh    sync.Mutex // guards refreshing and again
	refreshing bool
	again      bool
}

func (c *conn) timeout() time.Duration {
	if c.cfg.Timeout > 0 {
		return c.cfg.Timeout
	}
	return c.hub.opts.Timeout
}

// live returns the session if it is usable.
func (c *conn) live() (*sdk.ClientSession, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil && !c.dead {
		return c.session, c.gen, true
	}
	return nil, 0, false
}

// ensure returns a live session, connecting (and listing) if there is none.
func (c *conn) ensure(ctx context.Context) (*sdk.ClientSession, uint64, error) {
	if s, gen, ok := c.live(); ok {
		return s, gen, nil
	}
	c.dial.Lock()
	defer c.dial.Unlock()
	if s, gen, ok := c.live(); ok {
		return s, gen, nil // another caller connected while we waited
	}
	c.mu.Lock()
	if old := c.session; old != nil && c.dead {
		c.session = nil
		c.hub.closeLater(old) // releases the exited process's pipes and stops its group
	}
	c.mu.Unlock()
	return c.connect(ctx)
}

// connect opens a session and lists the tools, within the server's time
// limit. The caller holds c.dial.
func (c *conn) connect(ctx context.Context) (*sdk.ClientSession, uint64, error) {
	limit := c.timeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	log := c.hub.opts.Log.With("server", c.cfg.Name)

	var proc *process
	var transport sdk.Transport
	switch c.cfg.Transport {
	case config.TransportStdio:
		p, t, err := startProcess(c.cfg, c.hub.opts.Env)
		if err != nil {
			return nil, 0, err
		}
		proc, transport = p, t
	case config.TransportHTTP:
		transport = &sdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: httpClient(c.cfg.Headers)}
	case config.TransportSSE:
		transport = &sdk.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: httpClient(c.cfg.Headers)}
	default:
		return nil, 0, fmt.Errorf("unknown transport %q", c.cfg.Transport)
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "adaptbot", Title: "AdaptBot", Version: c.hub.opts.Version}, &sdk.ClientOptions{
		Capabilities:           &sdk.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.refreshSoon() },
	})
	s, err := c.hub.connectWithin(ctx, client, transport)
	if err != nil {
		err = c.reason(ctx, limit, "connecting", err, proc)
		if proc != nil {
			// Connect may have stopped it already; if not, stop it without
			// making this server's caller wait (Close waits).
			c.hub.later(proc.stop)
		}
		log.Warn("mcp: server not connected", "err", err)
		return nil, 0, err
	}
	desc := c.cfg.Description
	if ir := s.InitializeResult(); ir != nil && desc == "" {
		desc = ir.Instructions
		if desc == "" && ir.ServerInfo != nil {
			desc = strings.TrimSpace(ir.ServerInfo.Title + " " + ir.ServerInfo.Description)
		}
	}
	tools, err := c.listAll(ctx, s, desc)
	if err != nil {
		err = c.reason(ctx, limit, "listing tools", err, proc)
		c.hub.closeLater(s)
		log.Warn("mcp: server not listed", "err", err)
		return nil, 0, err
	}

	c.mu.Lock()
	if c.hub.closed.Load() {
		c.mu.Unlock()
		s.Close()
		return nil, 0, errors.New("the hub is closed")
	}
	c.gen++
	gen := c.gen
	c.session, c.dead, c.desc = s, false, desc
	c.mu.Unlock()
	c.setTools(tools)
	go func() {
		s.Wait()
		c.mu.Lock()
		if c.gen == gen {
			c.dead = true
		}
		c.mu.Unlock()
		log.Info("mcp: session ended", "gen", gen)
	}()
	log.Info("mcp: server connected", "tools", len(tools))
	return s, gen, nil
}

// connectWithin connects, returning when ctx ends even if the SDK is still
// cleaning up: after a timeout it tells the hung server that the request
// is cancelled and closes the session gracefully, which can take seconds
// more. That cleanup finishes in the background.
func (h *Hub) connectWithin(ctx context.Context, client *sdk.Client, t sdk.Transport) (*sdk.ClientSession, error) {
	type result struct {
		s   *sdk.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := client.Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: Protocol})
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		h.later(func() {
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		})
		return nil, ctx.Err()
	}
}

// reason turns a connect or list failure into what a person needs to know:
// the server did not answer in time, its command exited (with its last
// words on stderr), or the transport's own error.
func (c *conn) reason(ctx context.Context, limit time.Duration, doing string, err error, p *process) error {
	// The time limit first: a hung stdio server has been stopped by now,
	// and must not read as one that exited by itself.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v while %s (the server hangs or is too slow; raise its \"timeout\" if it is just slow)", limit, doing)
	}
	if p != nil {
		if state, said, exited := p.exitedWithin(200 * time.Millisecond); exited {
			msg := fmt.Sprintf("the command exited while %s (%s)", doing, state)
			if said != "" {
				msg += ": " + said
			}
			return errors.New(msg)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", doing, ctx.Err())
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// listAll lists every page of tools.
func (c *conn) listAll(ctx context.Context, s *sdk.ClientSession, desc string) ([]Tool, error) {
	var tools []Tool
	seen := map[string]bool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t == nil || t.Name == "" || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		tools = append(tools, fromSDK(c.cfg.Name, desc, t))
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, nil
}

// setTools replaces the server's tools and tells the listeners the new
// list, one list at a time, so they hear each server's lists in order.
func (c *conn) setTools(tools []Tool) {
	c.emit.Lock()
	defer c.emit.Unlock()
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
	c.hub.listenMu.RLock()
	ls := slices.Clone(c.hub.listeners)
	c.hub.listenMu.RUnlock()
	if len(ls) == 0 {
		return
	}
	specs := make([]toolbox.Spec, len(tools))
	for i, t := range tools {
		specs[i] = t.Spec()
	}
	for _, fn := range ls {
		fn(c.cfg.Name, specs)
	}
}

func (c *conn) snapshot() []Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Tool(nil), c.tools...)
}

func (c *conn) tool(name string) (Tool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.tools), func(i int) bool { return c.tools[i].Name >= name })
	if i < len(c.tools) && c.tools[i].Name == name {
		return c.tools[i], true
	}
	return Tool{}, false
}

// refreshSoon lists the tools again after a list_changed, off the session's
// reading goroutine. Notifications that come while a refresh runs cause
// exactly one more.
func (c *conn) refreshSoon() {
	c.refresh.Lock()
	if c.refreshing {
		c.again = true
		c.refresh.Unlock()
		return
	}
	c.refreshing = true
	c.refresh.Unlock()
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
			c.relist(ctx)
			cancel()
			c.refresh.Lock()
			if !c.again {
				c.refreshing = false
				c.refresh.Unlock()
				return
			}
			c.again = false
			c.refresh.Unlock()
		}
	}()
}

// relist lists the tools of the live session again; a failure keeps the
// tools known so far.
func (c *conn) relist(ctx context.Context) {
	s, _, ok := c.live()
	if !ok {
		return
	}
	c.mu.Lock()
	desc := c.desc
	c.mu.Unlock()
	tools, err := c.listAll(ctx, s, desc)
	if err != nil {
		c.hub.opts.Log.Warn("mcp: tools not refreshed", "server", c.cfg.Name, "err", err)
		return
	}
	c.setTools(tools)
}

// ended reports whether session gen is known to have ended.
func (c *conn) ended(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen == gen && c.dead
}

// drop forgets session gen, closing it, so the next ensure reconnects.
func (c *conn) drop(gen uint64) {
	c.mu.Lock()
	if c.gen != gen || c.session == nil {
		c.mu.Unlock()
		return
	}
	s := c.session
	c.session, c.dead = nil, false
	c.mu.Unlock()
	c.hub.closeLater(s)
}

func (c *conn) close() error {
	c.mu.Lock()
	s := c.session
	c.session = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	if err := s.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("server %s: close: %w", c.cfg.Name, err)
	}
	return nil
}

// httpClient sends headers with every request to a server, carries the
// caller's trace on (traceparent), and marks the failures of tool calls
// that happened before the call was sent (see undelivered).
func httpClient(headers map[string]string) *http.Client {
	rt := telemetry.Transport(http.DefaultTransport)
	if len(headers) > 0 {
		rt = headerTransport{base: rt, headers: headers}
	}
	return &http.Client{Transport: deliveryTransport{base: rt}}
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}
