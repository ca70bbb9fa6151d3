package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/toolbox"
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// Version is reported to clients as the implementation's version;
	// default "dev".
	Version string
	// Instructions tell clients (and their models) what the server is for;
	// empty means a short default.
	Instructions string
	// Log receives call failures and protocol events; nil discards them.
	// In stdio mode it must not write to standard output.
	Log *slog.Logger
	// SessionTimeout closes an HTTP session after this long without a
	// request; default 30 minutes. Stdio sessions end with their stream.
	SessionTimeout time.Duration
	// User, when set, names the person an HTTP request comes from (a
	// stable ID, never a secret), "" for nobody. A session remembers who
	// opened it, and the SDK refuses it to anyone else (403); nobody is
	// refused at once (401).
	User func(r *http.Request) string
	// Call, when set, carries out each tools/call: the server's service
	// layer, which checks the caller, and writes the call's benchmark row
	// and trace, as for a direct run. Nil calls the Box's tool directly
	// (`adaptbot mcp`, which owns no files to write to).
	Call func(ctx context.Context, name string, args json.RawMessage) (string, error)
	// Refuse, when set, hears of each tools/call refused before any tool
	// runs, because no tool of that name serves here (the SDK answers
	// "unknown tool"), with the call's context (who calls, through which
	// door) and the refusal: the server's service layer writes the call's
	// row, as for a call that ran. Nil writes nothing.
	Refuse func(ctx context.Context, name string, args json.RawMessage, err error)
}

// DefaultInstructions describe the server to clients when
// Options.Instructions is empty.
const DefaultInstructions = "AdaptBot's tools: built-in and generated Go tools that run in a sandbox. " +
	"The list changes while you are connected; watch notifications/tools/list_changed."

// Server publishes AdaptBot's own serving tools (a Box's local ones; an
// external server's tools are not passed on) over MCP and keeps the
// published list in step with the Box. It is safe for concurrent use; one
// Server serves any number of sessions, over stdio or HTTP.
type Server struct {
	tools   toolbox.Box
	log     *slog.Logger
	timeout time.Duration
	call    func(ctx context.Context, name string, args json.RawMessage) (string, error)
	refuse  func(ctx context.Context, name string, args json.RawMessage, err error)
	user    func(r *http.Request) string
	sdk     *sdk.Server

	mu        sync.Mutex
	published map[string]string // tool name → fingerprint of what clients see

	requests requests // the POSTs under way on /mcp, for their calls
	parked   parking  // calls waiting between the rounds of a multi round-trip request
}

// New returns a Server for the local tools of tools. It publishes the
// serving ones at once and subscribes to the Box's changes, so it must be
// created once per process, not per request.
func New(tools toolbox.Box, opts Options) *Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Instructions == "" {
		opts.Instructions = DefaultInstructions
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	s := &Server{tools: tools, log: opts.Log, timeout: opts.SessionTimeout, call: opts.Call, refuse: opts.Refuse, user: opts.User, published: map[string]string{}}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "adaptbot", Title: "AdaptBot", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: opts.Instructions,
		Logger:       opts.Log,
		// Advertise tools with list_changed even while the registry is
		// empty: the first generated tool must still reach clients.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	})
	s.sdk.AddReceivingMiddleware(s.unknownTools)
	s.Sync()
	tools.OnChange(func(c toolbox.Change) {
		if !c.Spec.Remote() {
			s.Sync()
		}
	})
	return s
}

// Sync makes the published tools match the Box's local serving ones.
// Clients are told with notifications/tools/list_changed when anything
// changed (the SDK batches changes that come within a few milliseconds). The
// Box's changes call it; it never needs calling by hand except in tests.
func (s *Server) Sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	local := map[string]toolbox.Spec{}
	for _, tool := range s.tools.Serving() {
		if t := tool.Spec(); !t.Remote() {
			local[t.Name] = t
		}
	}
	seen := make(map[string]bool, len(local))
	for _, t := range local {
		seen[t.Name] = true
		ann := Annotations(t, local)
		fp := fingerprint(t, ann)
		if s.published[t.Name] == fp {
			continue
		}
		schema, err := inputSchema(t.Parameters)
		var output json.RawMessage
		if err == nil {
			output, err = outputSchema(t.Output)
		}
		if err != nil {
			// Never publish what a client cannot call; the tool stays
			// unpublished until a good version serves.
			s.log.Warn("mcp: tool not published", "tool", t.Name, "err", err)
			if _, ok := s.published[t.Name]; ok {
				s.sdk.RemoveTools(t.Name)
				delete(s.published, t.Name)
			}
			continue
		}
		mt := &sdk.Tool{Name: t.Name, Title: ann.Title, Description: t.Description, InputSchema: schema, Annotations: ann}
		if output != nil {
			mt.OutputSchema = output
		}
		s.sdk.AddTool(mt, s.handler(t.Name))
		s.published[t.Name] = fp
	}
	var gone []string
	for name := range s.published {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		s.sdk.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.published, name)
		}
	}
}

// fingerprint says which version of a tool clients see: a new version, even
// with the same schema, is announced as a change, and so is a change of
// its annotations (a tool it calls started reaching the network, say).
func fingerprint(t toolbox.Spec, ann *sdk.ToolAnnotations) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00", t.Version, t.Description, t.Category)
	h.Write(t.Parameters)
	h.Write([]byte{0})
	h.Write(t.Output)
	a, _ := json.Marshal(ann)
	h.Write(a)
	return hex.EncodeToString(h.Sum(nil))
}

// Annotations describes a local tool to MCP clients, from what its source
// shows (contract.Spec) and what the tools it calls show, in local (the
// serving local tools by name):
//   - openWorldHint: it reaches the network (toolbox.OpenWorld);
//   - readOnlyHint: it does not. A tool can touch no file, process or
//     setting, so a tool that reaches nothing outside the process changes
//     nothing. A request to a remote service is not called read-only even
//     as a GET: what the service does with it is not ours to promise, and
//     clients may run read-only tools without asking;
//   - title: the name in words (toolbox.Title).
func Annotations(t toolbox.Spec, local map[string]toolbox.Spec) *sdk.ToolAnnotations {
	open := toolbox.OpenWorld(t, local)
	return &sdk.ToolAnnotations{
		Title:         toolbox.Title(t.Name),
		ReadOnlyHint:  !open,
		OpenWorldHint: &open,
	}
}

// outputSchema checks that a tool's output schema, if it has one, is a JSON
// object schema, as MCP requires of outputSchema.
func outputSchema(output json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(output)) == 0 {
		return nil, nil
	}
	return objectSchema("output", output)
}

// inputSchema checks that a tool's parameters are a JSON object schema, as
// MCP requires, and returns them for publishing.
func inputSchema(params json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return nil, errors.New("the tool has no parameters schema")
	}
	return objectSchema("parameters", params)
}

// objectSchema returns raw, a tool's schema of what ("parameters",
// "output"), if it is a JSON object schema.
func objectSchema(what string, raw json.RawMessage) (json.RawMessage, error) {
	var s struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s schema: %w", what, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`%s schema has type %v, MCP needs "object"`, what, s.Type)
	}
	return raw, nil
}

// handler runs one call of the tool named name. It looks the tool up at call
// time, so a call always runs the version that serves now.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args json.RawMessage
		var extra *sdk.RequestExtra
		var session *sdk.ServerSession
		var state string
		var responses sdk.InputResponseMap
		if req != nil {
			extra, session = req.Extra, req.Session
			if req.Params != nil {
				args, state, responses = req.Params.Arguments, req.Params.RequestState, req.Params.InputResponses
			}
		}
		ctx, cancel := s.requests.bind(ctx, extra)
		defer cancel()
		// The tool's requests that need approval ask by elicitation, where
		// this client can (approve.go): within the call on older protocol
		// versions, in rounds of the call (a multi round-trip request) on
		// newer ones.
		if multiRound(session) {
			asks := make(chan question)
			return s.parked.rounds(ctx, session, state, responses, asks, func(ctx context.Context) *sdk.CallToolResult {
				return s.callTool(adaptbot.WithAsker(ctx, roundAsker(asks)), name, args)
			}), nil
		}
		if a := asker(session); a != nil {
			ctx = adaptbot.WithAsker(ctx, a)
		}
		return s.callTool(ctx, name, args), nil
	}
}

// callTool runs one call of the tool named name and returns its result, or
// its failure as a result the model can read.
func (s *Server) callTool(ctx context.Context, name string, args json.RawMessage) *sdk.CallToolResult {
	t, err := s.local(name)
	var out string
	if err == nil {
		out, err = s.run(ctx, t, args)
	} else if s.refuse != nil {
		s.refuse(ctx, name, args, err) // gone since it was listed
	}
	if err == nil {
		var res *sdk.CallToolResult
		if res, err = s.result(t, out); err == nil {
			return res
		}
	}
	s.log.Info("mcp: tool call failed", "tool", name, "err", err)
	return toolError(err)
}

// unknownTools tells Options.Refuse of a tools/call of a tool this server
// does not publish, which the SDK refuses without calling a handler, so
// that the refusal has its row like any call.
func (s *Server) unknownTools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if call, ok := req.(*sdk.CallToolRequest); ok && s.refuse != nil && call.Params != nil {
			name := call.Params.Name
			s.mu.Lock()
			_, published := s.published[name]
			s.mu.Unlock()
			if !published {
				ctx, cancel := s.requests.bind(ctx, call.Extra)
				s.refuse(ctx, name, call.Params.Arguments, toolbox.NotFound(name))
				cancel()
			}
		}
		return next(ctx, method, req)
	}
}

// result is a successful call's result as clients get it: the text, and
// for a tool with an output schema the same JSON as structured content. A
// result that does not match the schema is the tool's failure: clients
// that check structured results (as they should) would refuse it anyway,
// with less to go on. The check is the toolbox's (toolbox.CheckOutput): a
// local tool's Call makes it before it returns, so the call's row, written
// by Options.Call, already records the failure; any other tool is checked
// here.
func (s *Server) result(t toolbox.Tool, out string) (*sdk.CallToolResult, error) {
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}
	if len(t.Spec().Output) == 0 {
		return res, nil
	}
	if err := toolbox.CheckOutput(t, out); err != nil {
		return nil, err
	}
	res.StructuredContent = json.RawMessage(out)
	return res, nil
}

// run carries out one call of the local tool t: through Options.Call when
// set (the server's service layer), else t itself.
func (s *Server) run(ctx context.Context, t toolbox.Tool, args json.RawMessage) (string, error) {
	if s.call != nil {
		return s.call(ctx, t.Spec().Name, args)
	}
	return t.Call(ctx, args)
}

// local returns the local tool named name, as it serves now.
func (s *Server) local(name string) (toolbox.Tool, error) {
	t, ok := s.tools.Tool(name)
	if !ok || t.Spec().Remote() {
		return nil, toolbox.NotFound(name)
	}
	return t, nil
}

// toolError is a failed call as MCP reports it: a result the model can read
// and act on, not a protocol error.
func toolError(err error) *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	r.SetError(err)
	return r
}

// Run serves one session over t until the client leaves or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	return s.sdk.Run(ctx, t)
}

// ServeStdio serves one session over in and out (newline-delimited JSON-RPC,
// as `adaptbot mcp` does on its standard streams) until the client closes
// in or ctx ends. Every request read before the end of in is answered
// before it returns, so a client may pipe its requests and close its end
// (printf '...' | adaptbot mcp). A client that leaves is not an error.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.Run(ctx, drainTransport{&sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("mcp: stdio: %w", err)
}

// drainTransport gives its connections drainConn's end of input.
type drainTransport struct{ sdk.Transport }

func (t drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{}), closed: make(chan struct{})}, nil
}

// drainConn holds back the end of input until every request read has been
// answered. The SDK's stdio connection reports it at once, and the session
// then cancels the requests still being handled and drops their answers
// (modelcontextprotocol/go-sdk#1061), so a client that wrote its requests
// and closed its end got nothing back.
//
// Wrapping the connection hides the SDK's protocol-version hook from it, so
// it no longer refuses JSON-RPC batches under protocol 2025-06-18 and later;
// it still answers them.
type drainConn struct {
	sdk.Connection

	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // requests read and not answered yet
	answered chan struct{}       // closed and replaced at each answer

	closeOnce sync.Once
	closed    chan struct{}
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.pending[req.ID] = true // a duplicate ID is refused, and answered, once
			c.mu.Unlock()
		}
		return msg, nil
	}
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	for {
		c.mu.Lock()
		n, answered := len(c.pending), c.answered
		c.mu.Unlock()
		if n == 0 {
			return nil, err
		}
		select {
		case <-answered:
		case <-c.closed:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		// Answered, or never will be if the write failed: either way the
		// end of input need not wait for it.
		c.mu.Lock()
		if c.pending[resp.ID] {
			delete(c.pending, resp.ID)
			close(c.answered)
			c.answered = make(chan struct{})
		}
		c.mu.Unlock()
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Handler returns the streamable HTTP handler: sessions (Mcp-Session-Id),
// responses as server-sent events, and the standalone GET stream on which
// list_changed reaches clients between requests. Mount it behind the same
// access rules as the rest of the API.
//
// A tool call stops when the client leaves before its answer: the SDK runs
// calls under the session, not the HTTP request that carried them, and
// without a store of events (we keep none) an answer to a client that left
// is never read.
func (s *Server) Handler() http.Handler {
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk },
		&sdk.StreamableHTTPOptions{Logger: s.log, SessionTimeout: s.timeout})
	if s.user != nil {
		h = s.sessionUser(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		// Tag the request, so a call it carries finds its context (the SDK
		// hands handlers the request's header); a tag a client sent is
		// replaced.
		tag, untag := s.requests.add(r.Context())
		defer untag()
		r = r.Clone(r.Context())
		r.Header.Set(requestTagHeader, tag)
		h.ServeHTTP(w, r)
	})
}

// sessionUser arms the SDK's session-user check: each request carries
// auth.TokenInfo with the caller's ID (Options.User), the session keeps the
// ID of the request that opened it, and a request of anyone else is
// refused. The SDK sets TokenInfo only through its bearer middleware,
// which reads the Authorization header; the caller has already been
// authenticated (by a key, a session cookie, or a proxy's header), so the
// middleware is handed a stand-in token and its verifier asks Options.User.
// The SDK, and the tools' handlers, never see the caller's own credential.
func (s *Server) sessionUser(h http.Handler) http.Handler {
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := s.user(r)
		if id == "" {
			return nil, fmt.Errorf("%w: sign in first", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: id}, nil
	}
	guarded := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer caller")
		guarded.ServeHTTP(w, r)
	})
}

// requestTagHeader carries a POST's tag to the calls it holds.
const requestTagHeader = "X-Adaptbot-Request-Tag"

// errClientLeft ends a call whose HTTP request ended before its answer.
var errClientLeft = errors.New("the client left before the answer")

// requests are the contexts of the POSTs under way on /mcp, by tag.
type requests struct {
	mu   sync.Mutex
	live map[string]context.Context
}

func (rs *requests) add(ctx context.Context) (string, func()) {
	var b [16]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	rs.mu.Lock()
	if rs.live == nil {
		rs.live = map[string]context.Context{}
	}
	rs.live[tag] = ctx
	rs.mu.Unlock()
	return tag, func() {
		rs.mu.Lock()
		delete(rs.live, tag)
		rs.mu.Unlock()
	}
}

// bind returns ctx ended also when the HTTP request that carried the call
// ends (the client left), and carrying that request's values: who is
// calling, through which door, in which trace. The SDK runs calls under
// the session, whose context is the request that opened it; a call must
// be the caller's own, never the opener's. A call that came another way
// (stdio) is not bound; one whose request is already over is ended at
// once.
func (rs *requests) bind(ctx context.Context, extra *sdk.RequestExtra) (context.Context, context.CancelFunc) {
	if extra == nil || extra.Header.Get(requestTagHeader) == "" {
		return context.WithCancel(ctx)
	}
	rs.mu.Lock()
	rctx, ok := rs.live[extra.Header.Get(requestTagHeader)]
	rs.mu.Unlock()
	if ok {
		ctx = callValues{Context: ctx, request: rctx}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if !ok {
		cancel(errClientLeft)
		return ctx, func() {}
	}
	stop := context.AfterFunc(rctx, func() { cancel(errClientLeft) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

// callValues is a call's context whose values are its HTTP request's first
// (the caller's identity, door and trace), and the session's after.
type callValues struct {
	context.Context
	request context.Context
}

func (c callValues) Value(key any) any {
	if v := c.request.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// Close ends every open session, so that long-lived HTTP streams let a
// server shut down.
func (s *Server) Close() error {
	var errs []error
	for ss := range s.sdk.Sessions() {
		if err := ss.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
