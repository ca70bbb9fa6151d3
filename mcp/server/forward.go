package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ForwardOptions configures a Forwarder.
type ForwardOptions struct {
	// URL is the /mcp endpoint of the server that carries out the calls.
	URL string
	// Header is sent with every request to URL: the caller's credential
	// (Authorization: Bearer KEY), so each call runs as that person.
	Header http.Header
	// KeepAlive pings the server this often, so that a client idle for a
	// while does not find its session expired; default a minute.
	KeepAlive time.Duration
	// Log receives what went wrong with the server; it must not write to
	// standard output. Nil discards it.
	Log *slog.Logger
}

// Forwarder serves, over stdio, the tools of another AdaptBot's /mcp and
// carries each call there: `adaptbot mcp` beside a running server. The
// server checks the caller, writes the call's row and trace, and records
// its failure cases, as for any call to /mcp; the Forwarder keeps no state
// of its own but the session. The server's list_changed reaches the stdio
// client. A session the server ended (it restarted, or the session timed
// out) is replaced at the next call; a call it refused for that reason is
// sent again, on the new session, since it never ran.
type Forwarder struct {
	opts   ForwardOptions
	log    *slog.Logger
	client *sdk.Client
	srv    *sdk.Server

	dialMu sync.Mutex // one new session at a time
	mu     sync.Mutex
	cs     *sdk.ClientSession // nil once the session has ended

	syncMu    sync.Mutex        // guards srv's tools, and published
	published map[string]string // tool name → the tool as listed, in JSON

	// The calls parked between the rounds of the stdio client's requests,
	// and the server's questions waiting for one of their rounds.
	parked    parking
	questions chan question
}

// ErrRefused is Dial's error when the server refused the caller's
// credential (HTTP 401 or 403).
var ErrRefused = errors.New("the server refused the caller's credential")

// Dial connects to the server at opts.URL, as the caller opts.Header names,
// and lists its tools. Its error says why the server would not have the
// session (a refused credential, say).
func Dial(ctx context.Context, opts ForwardOptions) (*Forwarder, error) {
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	f := &Forwarder{opts: opts, log: opts.Log, published: map[string]string{}, questions: make(chan question)}
	f.client = sdk.NewClient(&sdk.Implementation{Name: "adaptbot-mcp", Version: "dev"}, &sdk.ClientOptions{
		KeepAlive: opts.KeepAlive,
		// Off the session's own goroutine: listing is a request of its
		// own, whose answer that goroutine has to read.
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			go f.sync(context.Background(), req.Session)
		},
		// The server asks for a person's approval of a tool's request in
		// rounds of the call (forward passes them on to the stdio client);
		// a server that asks within the call is answered by the stdio
		// client, if it can.
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return f.elicit(ctx, req.Params)
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	info := cs.InitializeResult()
	impl := &sdk.Implementation{Name: "adaptbot", Title: "AdaptBot", Version: "dev"}
	var instructions string
	if info != nil {
		instructions = info.Instructions
		if info.ServerInfo != nil {
			impl.Version = info.ServerInfo.Version
		}
	}
	srv := sdk.NewServer(impl, &sdk.ServerOptions{Instructions: instructions, Logger: f.log,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
	// A list_changed that came before this has nothing to update yet: the
	// sync below lists the tools as they are now.
	f.syncMu.Lock()
	f.srv = srv
	f.syncMu.Unlock()
	if err := f.sync(ctx, cs); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// connect opens a new session with the server and makes it the current one.
func (f *Forwarder) connect(ctx context.Context) (*sdk.ClientSession, error) {
	rt := &withHeader{base: http.DefaultTransport, header: f.opts.Header}
	t := &sdk.StreamableClientTransport{Endpoint: f.opts.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: rt}}
	cs, err := f.client.Connect(ctx, t, nil)
	if err != nil {
		if rt.refused.Load() {
			err = fmt.Errorf("%w (%v)", ErrRefused, err)
		}
		return nil, fmt.Errorf("the AdaptBot server at %s did not open an MCP session: %w", f.opts.URL, err)
	}
	f.mu.Lock()
	f.cs = cs
	f.mu.Unlock()
	go func() {
		cs.Wait()
		f.mu.Lock()
		if f.cs == cs {
			f.cs = nil
		}
		f.mu.Unlock()
	}()
	return cs, nil
}

// session is the current session, or a new one when it has ended.
func (f *Forwarder) session(ctx context.Context) (*sdk.ClientSession, error) {
	current := func() *sdk.ClientSession {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.cs
	}
	if cs := current(); cs != nil {
		return cs, nil
	}
	// Calls that find the session ended together share one new session.
	f.dialMu.Lock()
	defer f.dialMu.Unlock()
	if cs := current(); cs != nil {
		return cs, nil
	}
	cs, err := f.connect(ctx)
	if err != nil {
		return nil, err
	}
	// Tools may have changed while no session listened for list_changed.
	if err := f.sync(ctx, cs); err != nil {
		f.log.Warn("mcp: tools not listed again after reconnecting", "err", err)
	}
	return cs, nil
}

// drop ends cs and forgets it, if it is still the current session.
func (f *Forwarder) drop(cs *sdk.ClientSession) {
	f.mu.Lock()
	if f.cs == cs {
		f.cs = nil
	}
	f.mu.Unlock()
	go cs.Close()
}

// sync makes the published tools those the server lists on cs now.
func (f *Forwarder) sync(ctx context.Context, cs *sdk.ClientSession) error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	if f.srv == nil {
		return nil
	}
	listed := map[string]*sdk.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", f.opts.URL, err)
		}
		listed[t.Name] = t
	}
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		t := listed[name]
		raw, _ := json.Marshal(t)
		if f.published[name] == string(raw) {
			continue
		}
		if !isObjectSchema(t.InputSchema) || (t.OutputSchema != nil && !isObjectSchema(t.OutputSchema)) {
			// The SDK refuses such a tool; ours never lists one.
			f.log.Warn("mcp: tool not passed on: its schemas are not JSON objects", "tool", name)
			continue
		}
		f.srv.AddTool(t, f.forward(name))
		f.published[name] = string(raw)
	}
	var gone []string
	for name := range f.published {
		if listed[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		f.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(f.published, name)
		}
	}
	return nil
}

// isObjectSchema reports whether a listed schema is a JSON object schema.
func isObjectSchema(schema any) bool {
	m, ok := schema.(map[string]any)
	return ok && m["type"] == "object"
}

// forward is the handler of the tool named name: the call goes to the
// server, and its result, an error result included, comes back as the
// server sent it. The server's questions (a tool's request waits for
// approval) go to the stdio client: within the call, or, for a client
// asked in rounds, in rounds of the call, which runs on parked between
// them (approve.go).
func (f *Forwarder) forward(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args any
		var ss *sdk.ServerSession
		var state string
		var responses sdk.InputResponseMap
		if req != nil {
			ss = req.Session
			if req.Params != nil {
				state, responses = req.Params.RequestState, req.Params.InputResponses
				if len(req.Params.Arguments) > 0 {
					args = req.Params.Arguments
				}
			}
		}
		if multiRound(ss) {
			return f.parked.rounds(ctx, ss, state, responses, f.questions, func(ctx context.Context) *sdk.CallToolResult {
				return f.call(ctx, ss, name, args)
			}), nil
		}
		return f.call(ctx, ss, name, args), nil
	}
}

// call carries one call of the tool name to the server, and answers the
// questions the server asks meanwhile through the stdio client of ss.
func (f *Forwarder) call(ctx context.Context, ss *sdk.ServerSession, name string, args any) *sdk.CallToolResult {
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	for attempt := 0; ; attempt++ {
		cs, err := f.session(ctx)
		if err != nil {
			return toolError(err)
		}
		res, err := cs.CallTool(ctx, params)
		switch {
		case err == nil && len(res.InputRequests) > 0:
			// A server that asks in rounds: the stdio client answers, and
			// the call goes on with the answers.
			if params.InputResponses, err = f.answer(ctx, ss, res.InputRequests); err != nil {
				return toolError(fmt.Errorf("tool %s: %w; nothing was sent", name, err))
			}
			params.RequestState = res.RequestState
			attempt = -1 // a new round, on the same session
			continue
		case err == nil:
			return res
		case errors.Is(err, sdk.ErrSessionMissing) && attempt == 0:
			// The server had ended the session: the call never ran
			// there, so it goes again on a new one.
			f.drop(cs)
			continue
		case errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF):
			f.drop(cs)
			return toolError(fmt.Errorf("tool %s: the connection to the AdaptBot server at %s was lost; the call may or may not have run", name, f.opts.URL))
		}
		return toolError(err)
	}
}

// answer has the stdio client of ss answer the server's questions.
func (f *Forwarder) answer(ctx context.Context, ss *sdk.ServerSession, questions sdk.InputRequestMap) (sdk.InputResponseMap, error) {
	out := sdk.InputResponseMap{}
	for id, q := range questions {
		p, ok := q.(*sdk.ElicitParams)
		if !ok {
			return nil, fmt.Errorf("the server asked what this client cannot answer (%T)", q)
		}
		res, err := f.ask(ctx, ss, p)
		if err != nil {
			return nil, err
		}
		out[id] = res
	}
	return out, nil
}

// ask has the stdio client of ss answer one question: within its call, or
// in the next round of it.
func (f *Forwarder) ask(ctx context.Context, ss *sdk.ServerSession, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.Elicitation == nil {
		return nil, errors.New("the tool's request needs your approval, and this MCP client cannot ask you (it has no elicitation)")
	}
	var res *sdk.ElicitResult
	var err error
	if multiRound(ss) {
		res, err = ask(ctx, f.questions, p)
	} else {
		res, err = ss.Elicit(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("the MCP client could not ask: %w", err)
	}
	return res, nil
}

// elicit passes a question the server asks within a call on to the
// stdio client: its one session.
func (f *Forwarder) elicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	f.syncMu.Lock()
	srv := f.srv
	f.syncMu.Unlock()
	if srv != nil {
		for ss := range srv.Sessions() {
			return f.ask(ctx, ss, p)
		}
	}
	return nil, errors.New("no MCP client is connected to ask")
}

// ServeStdio serves one session over in and out, as Server.ServeStdio
// does, until the client leaves or ctx ends.
func (f *Forwarder) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	err := f.srv.Run(ctx, drainTransport{&sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("mcp: stdio: %w", err)
}

// Close ends the session with the server.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	cs := f.cs
	f.cs = nil
	f.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Close()
}

// withHeader sends header with every request, and notes a refusal of it.
type withHeader struct {
	base    http.RoundTripper
	header  http.Header
	refused atomic.Bool // a 401 or 403 came back
}

func (t *withHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			req.Header[k] = vs
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.refused.Store(true)
	}
	return resp, err
}
