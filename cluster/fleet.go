package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot"
	"adaptbot/reqid"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// ModeFleet is the sandbox mode a Fleet reports in its Stats.
const ModeFleet sandbox.Mode = "fleet"

// fleetGrace is how long past a call's limit a replica waits for a worker's
// answer: the worker's pool takes up to its kill slack to give its own
// verdict on a call that ran past its limit, and the answer crosses NATS.
const fleetGrace = 2 * time.Second

// fleetRequest is a tool call or compile check as it crosses NATS. The
// source travels with every call: tools are small, and a worker caches the
// compiled version by its hash.
type fleetRequest struct {
	Tool    string          `json:"tool"`
	Source  []byte          `json:"source"`
	Input   json.RawMessage `json:"input,omitempty"`
	Timeout time.Duration   `json:"timeout"`
	// Nested is sandbox.Call.Nested: another tool's call made this one.
	Nested bool `json:"nested,omitempty"`
	// Calls is the subject (FleetNestedPrefix...) where the worker sends
	// the calls the tool makes of other tools; empty: it may make none.
	Calls string `json:"calls,omitempty"`
}

// nestedAsk is a tool's call of another tool, sent by a fleet worker to the
// replica on the call's Calls subject; nestedAnswer is the replica's
// answer, on the worker's FleetBackPrefix subject.
type nestedAsk struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type nestedAnswer struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	Failed bool   `json:"failed,omitempty"`
}

// fleetReply is a worker's answer: an output, or the sandbox's verdict.
// Busy says the worker had no free sandbox worker and did not start the
// call, so the replica sends it again (to another worker, most likely);
// Kind and Error say so too, for a replica of an older release.
type fleetReply struct {
	Output string           `json:"output"`
	Took   time.Duration    `json:"took"`
	Kind   adaptbot.Failure `json:"kind,omitempty"`
	Error  string           `json:"error,omitempty"`
	Worker string           `json:"worker,omitempty"`
	Busy   bool             `json:"busy,omitempty"`
}

// Fleet is the sandbox.Runner of a replica that sends its tool calls to the
// worker fleet (`adaptbot worker --nats URL`) over NATS, request and reply:
// any one worker of the queue group answers each call. A call that no
// worker takes, or whose worker dies or goes silent, fails with
// adaptbot.FailUnavailable (503 at the edge) within the call's limit plus a
// short grace, and fails alone.
//
// A tool running on a worker may call other tools (toolkit.Call): the call
// names a subject of this replica's (FleetNestedPrefix), the worker sends
// each of the tool's calls there, and the replica runs it with the
// toolkit.Caller of the call's context — its toolbox, which checks it and
// runs the callee (on the fleet again, or on an MCP server) — and answers on
// the worker's FleetBackPrefix subject.
type Fleet struct {
	nc      *nats.Conn
	timeout time.Duration
	busy    atomic.Int64
	closed  atomic.Bool

	// The calls in flight whose tools may call tools, by token: answered
	// on nestedSub, subscribed at the first such call.
	nmu       sync.Mutex
	nestedID  string
	nestedSub *nats.Subscription
	hosts     map[string]*nestedHost
}

// nestedHost serves the calls one tool call on the fleet makes.
type nestedHost struct {
	ctx  context.Context
	host toolkit.Caller
	busy atomic.Bool // a tool's calls run one at a time
}

var _ sandbox.Runner = (*Fleet)(nil)

// NewFleet returns a Runner that sends calls over nc, each capped at
// callTimeout (0 means sandbox.DefaultCallTimeout) or the call's own lower
// limit. The caller keeps nc and closes it after the Fleet.
func NewFleet(nc *nats.Conn, callTimeout time.Duration) *Fleet {
	if callTimeout <= 0 {
		callTimeout = sandbox.DefaultCallTimeout
	}
	return &Fleet{nc: nc, timeout: callTimeout}
}

// Run sends the call to one worker of the fleet and returns its answer.
func (f *Fleet) Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error) {
	limit := f.timeout
	if c.Timeout > 0 && c.Timeout < limit {
		limit = c.Timeout
	}
	if c.Nested {
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			if left <= 0 {
				return sandbox.Result{}, &sandbox.Error{Tool: c.Tool, Kind: adaptbot.FailTimeout, Msg: "its caller had no time left to run it"}
			}
			limit = min(limit, left)
		}
	}
	req := fleetRequest{Tool: c.Tool, Source: c.Source, Input: c.Input, Timeout: limit, Nested: c.Nested}
	if host := toolkit.CallerFrom(ctx); host != nil {
		hctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		subject, done, err := f.serveCalls(hctx, host)
		if err != nil {
			return sandbox.Result{}, &sandbox.Error{Tool: c.Tool, Kind: adaptbot.FailUnavailable, Msg: "cannot take the tool's calls of other tools: " + err.Error()}
		}
		defer done()
		req.Calls = subject
	}
	rep, err := f.ask(ctx, FleetRun, c.Tool, req, limit)
	if err != nil {
		return sandbox.Result{}, err
	}
	return sandbox.Result{Output: rep.Output, Duration: rep.Took}, nil
}

// serveCalls takes the calls of other tools that one call's tool makes on
// its worker, served by host within ctx, until done. It returns the subject
// the worker sends them to.
func (f *Fleet) serveCalls(ctx context.Context, host toolkit.Caller) (subject string, done func(), err error) {
	f.nmu.Lock()
	defer f.nmu.Unlock()
	if f.nestedSub == nil {
		id := strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)
		sub, err := f.nc.Subscribe(FleetNestedPrefix+id+".*", f.answerCall)
		if err != nil {
			return "", nil, err
		}
		sub.SetPendingLimits(-1, -1) //nolint:errcheck // each call waits on its tool, bounded by the call's limit
		f.nestedID, f.nestedSub, f.hosts = id, sub, map[string]*nestedHost{}
	}
	token := strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)
	f.hosts[token] = &nestedHost{ctx: ctx, host: host}
	return FleetNestedPrefix + f.nestedID + "." + token, func() {
		f.nmu.Lock()
		delete(f.hosts, token)
		f.nmu.Unlock()
	}, nil
}

// answerCall runs a tool's call of another tool, sent by a fleet worker,
// and answers it.
func (f *Fleet) answerCall(m *nats.Msg) {
	answer := func(out string, err error) {
		a := nestedAnswer{Output: out}
		if err != nil {
			a = nestedAnswer{Failed: true, Error: err.Error()}
		}
		b, _ := json.Marshal(a)
		if int64(len(b)) > f.nc.MaxPayload() {
			b, _ = json.Marshal(nestedAnswer{Failed: true, Error: fmt.Sprintf("the output is larger than NATS carries in one message (%d bytes)", f.nc.MaxPayload())})
		}
		m.Respond(b) //nolint:errcheck // the worker gives up at its call's limit
	}
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	f.nmu.Lock()
	h := f.hosts[token]
	f.nmu.Unlock()
	var ask nestedAsk
	switch {
	case h == nil:
		answer("", errors.New("the call that made this one has ended"))
		return
	case json.Unmarshal(m.Data, &ask) != nil:
		answer("", errors.New("the worker sent what is not a tool call"))
		return
	case !h.busy.CompareAndSwap(false, true):
		answer("", fmt.Errorf("calling %s: a tool's calls run one at a time", ask.Tool))
		return
	}
	go func() {
		defer h.busy.Store(false)
		answer(h.host.CallTool(h.ctx, ask.Tool, ask.Args))
	}()
}

// Compile asks one worker of the fleet to load the tool without calling it.
func (f *Fleet) Compile(ctx context.Context, tool string, source []byte) error {
	_, err := f.ask(ctx, FleetCompile, tool, fleetRequest{Tool: tool, Source: source, Timeout: f.timeout}, f.timeout)
	return err
}

func (f *Fleet) ask(ctx context.Context, subject, tool string, req fleetRequest, limit time.Duration) (fleetReply, error) {
	unavailable := func(format string, args ...any) error {
		return &sandbox.Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: fmt.Sprintf(format, args...)}
	}
	if f.closed.Load() {
		return fleetReply{}, unavailable("the fleet runner is closed")
	}
	if !f.nc.IsConnected() {
		return fleetReply{}, unavailable("NATS is not connected, so no fleet worker can run the call; it runs again once NATS is back")
	}
	data, err := json.Marshal(req)
	if err != nil {
		return fleetReply{}, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	if id := reqid.From(ctx); id != "" {
		msg.Header.Set("Adaptbot-Request-Id", id)
	}
	wait := limit + fleetGrace
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f.busy.Add(1)
	defer f.busy.Add(-1)
	// A worker whose sandbox workers are all busy says so at once rather
	// than queue the call, so that its death would cost only the calls it
	// was running: the call never started there, and goes again, most
	// likely to another worker of the queue group.
	for backoff := 5 * time.Millisecond; ; backoff = min(2*backoff, 200*time.Millisecond) {
		rep, err := f.request(ctx, rctx, msg, tool, subject, wait, limit)
		if err != nil || !rep.Busy {
			return rep, err
		}
		select {
		case <-rctx.Done():
			if ctx.Err() != nil {
				return fleetReply{}, fmt.Errorf("tool %s: %w", tool, ctx.Err())
			}
			return fleetReply{}, unavailable("every fleet worker was busy for %s (the call's limit of %s and %s of grace): add workers, or raise their ADAPTBOT_WORKERS", wait, limit, fleetGrace)
		case <-time.After(backoff):
		}
	}
}

// request sends one fleet call and reads its answer.
func (f *Fleet) request(ctx, rctx context.Context, msg *nats.Msg, tool, subject string, wait, limit time.Duration) (fleetReply, error) {
	unavailable := func(format string, args ...any) error {
		return &sandbox.Error{Tool: tool, Kind: adaptbot.FailUnavailable, Msg: fmt.Sprintf(format, args...)}
	}
	resp, err := f.nc.RequestMsgWithContext(rctx, msg)
	switch {
	case err == nil:
	case errors.Is(err, nats.ErrNoResponders):
		return fleetReply{}, unavailable("no fleet worker is listening on %s; start one with `adaptbot worker --nats URL`", subject)
	case ctx.Err() != nil:
		return fleetReply{}, fmt.Errorf("tool %s: %w", tool, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fleetReply{}, unavailable("no fleet worker answered within %s (the call's limit of %s and %s of grace): the worker died or is cut off", wait, limit, fleetGrace)
	default:
		return fleetReply{}, unavailable("fleet request: %v", err)
	}
	var rep fleetReply
	if err := json.Unmarshal(resp.Data, &rep); err != nil {
		return fleetReply{}, unavailable("a fleet worker answered with what is not a reply: %v", err)
	}
	if rep.Busy {
		return rep, nil
	}
	if rep.Kind != "" {
		return rep, &sandbox.Error{Tool: tool, Kind: rep.Kind, Msg: rep.Error}
	}
	return rep, nil
}

// Close stops sending calls; it leaves the connection to its owner.
func (f *Fleet) Close() error {
	f.closed.Store(true)
	f.nmu.Lock()
	defer f.nmu.Unlock()
	if f.nestedSub != nil {
		f.nestedSub.Unsubscribe() //nolint:errcheck // the connection may be closing
	}
	return nil
}

// Stats reports the fleet mode and the calls in flight. The fleet's size is
// not known here: workers come and go without telling the replicas.
func (f *Fleet) Stats() sandbox.Stats {
	n := int(f.busy.Load())
	return sandbox.Stats{Mode: ModeFleet, Busy: n, Confinement: "in the fleet's workers"}
}

// ServeFleet makes this process a worker of the fleet: it answers the tool
// calls and compile checks of the queue group on nc with runner, each call
// in its own goroutine (runner queues them for its workers), until ctx ends;
// then it stops taking calls, finishes those in flight, and returns. id
// names the worker in its answers, for the replicas' logs.
func ServeFleet(ctx context.Context, nc *nats.Conn, runner sandbox.Runner, id string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	back, err := openBack(nc)
	if err != nil {
		return fmt.Errorf("cluster: join the fleet: %w", err)
	}
	defer back.close()
	// A worker takes as many calls as its pool runs at once (0: no bound,
	// an in-process runner); past that it answers busy and starts nothing,
	// so that calls wait in no dead worker's queue. A tool's call of a
	// tool is always taken: its caller, here or on another worker, waits
	// for it (the pool runs it while the caller waits).
	capacity := int64(runner.Stats().Size)
	var running atomic.Int64
	busy, _ := json.Marshal(fleetReply{Worker: id, Busy: true, Kind: adaptbot.FailUnavailable, Error: "the fleet worker " + id + " is busy"})
	handle := func(compile bool) nats.MsgHandler {
		return func(m *nats.Msg) {
			n := running.Add(1)
			if capacity > 0 && n > capacity && !nestedCall(m.Data) {
				running.Add(-1)
				m.Respond(busy) //nolint:errcheck // the replica asks again
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer running.Add(-1)
				serveOne(ctx, nc, runner, id, compile, m, log, back)
			}()
		}
	}
	run, err := nc.QueueSubscribe(FleetRun, FleetQueue, handle(false))
	if err != nil {
		return fmt.Errorf("cluster: join the fleet: %w", err)
	}
	compile, err := nc.QueueSubscribe(FleetCompile, FleetQueue, handle(true))
	if err != nil {
		run.Unsubscribe() //nolint:errcheck // failing either way
		return fmt.Errorf("cluster: join the fleet: %w", err)
	}
	// Unlimited pending: calls wait in the runner's queue, which has its
	// own timeout, rather than being dropped by the client library.
	run.SetPendingLimits(-1, -1)     //nolint:errcheck
	compile.SetPendingLimits(-1, -1) //nolint:errcheck
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("cluster: join the fleet: %w", err)
	}
	log.Info("fleet worker serving", "worker", id, "subject", FleetRun, "queue", FleetQueue)
	<-ctx.Done()
	run.Drain()     //nolint:errcheck
	compile.Drain() //nolint:errcheck
	wg.Wait()
	return nil
}

// nestedCall reports whether a fleet request is a tool's call of a tool.
func nestedCall(data []byte) bool {
	var req struct {
		Nested bool `json:"nested"`
	}
	return json.Unmarshal(data, &req) == nil && req.Nested
}

func serveOne(ctx context.Context, nc *nats.Conn, runner sandbox.Runner, id string, compile bool, m *nats.Msg, log *slog.Logger, back *backChannel) {
	var req fleetRequest
	rep := fleetReply{Worker: id}
	if err := json.Unmarshal(m.Data, &req); err != nil {
		rep.Kind, rep.Error = adaptbot.FailInvalidArgs, "the request is not a fleet call: "+err.Error()
	} else {
		// The replica stops waiting at the limit plus its grace; so does
		// the call, queued or running, here.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), req.Timeout+fleetGrace)
		if rid := m.Header.Get("Adaptbot-Request-Id"); rid != "" {
			cctx = reqid.With(cctx, rid)
		}
		if strings.HasPrefix(req.Calls, FleetNestedPrefix) {
			cctx = toolkit.WithCaller(cctx, &replicaCaller{back: back, subject: req.Calls})
		}
		var err error
		if compile {
			err = runner.Compile(cctx, req.Tool, req.Source)
		} else {
			var res sandbox.Result
			res, err = runner.Run(cctx, sandbox.Call{Tool: req.Tool, Source: req.Source, Input: req.Input, Timeout: req.Timeout, Nested: req.Nested})
			rep.Output, rep.Took = res.Output, res.Duration
		}
		cancel()
		if err != nil {
			rep.Error = err.Error()
			var se *sandbox.Error
			if errors.As(err, &se) {
				rep.Kind, rep.Error = se.Kind, se.Msg
			}
			if rep.Kind == "" {
				rep.Kind = adaptbot.FailUnavailable
			}
		}
	}
	b, err := json.Marshal(rep)
	if err == nil && int64(len(b)) > nc.MaxPayload() {
		rep.Output = ""
		rep.Kind, rep.Error = adaptbot.FailBadOutput, fmt.Sprintf("the result is larger than NATS carries in one message (%d bytes)", nc.MaxPayload())
		b, err = json.Marshal(rep)
	}
	if err != nil {
		log.Error("fleet worker: encode reply", "tool", req.Tool, "err", err)
		return
	}
	if err := m.Respond(b); err != nil {
		log.Warn("fleet worker: reply lost", "tool", req.Tool, "err", err)
	}
}

// backChannel is where a fleet worker hears the replicas' answers to the
// calls its tools make of other tools: one subscription per worker process
// (FleetBackPrefix + id + ".*"), each call waiting on its own subject.
type backChannel struct {
	nc     *nats.Conn
	prefix string
	sub    *nats.Subscription

	mu      sync.Mutex
	seq     uint64
	waiting map[string]chan *nats.Msg
}

func openBack(nc *nats.Conn) (*backChannel, error) {
	b := &backChannel{nc: nc, prefix: FleetBackPrefix + strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix) + ".", waiting: map[string]chan *nats.Msg{}}
	sub, err := nc.Subscribe(b.prefix+"*", func(m *nats.Msg) {
		b.mu.Lock()
		ch := b.waiting[m.Subject]
		b.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	b.sub = sub
	return b, nil
}

func (b *backChannel) close() { b.sub.Unsubscribe() } //nolint:errcheck // the connection may be closing

// replicaCaller is the toolkit.Caller of a call served by a fleet worker:
// it sends the tool's calls of other tools to the replica that sent the
// call, and waits for the answer.
type replicaCaller struct {
	back    *backChannel
	subject string
}

// CallTool asks the replica to run the tool name, and waits for its answer
// or the end of ctx (the call's limit).
func (c *replicaCaller) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	b := c.back
	data, err := json.Marshal(nestedAsk{Tool: name, Args: args})
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	b.seq++
	reply := b.prefix + strconv.FormatUint(b.seq, 10)
	ch := make(chan *nats.Msg, 1)
	b.waiting[reply] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.waiting, reply)
		b.mu.Unlock()
	}()
	if err := b.nc.PublishMsg(&nats.Msg{Subject: c.subject, Reply: reply, Data: data}); err != nil {
		return "", fmt.Errorf("calling %s: the replica cannot be reached: %w", name, err)
	}
	select {
	case m := <-ch:
		if m.Header.Get("Status") == "503" {
			return "", fmt.Errorf("calling %s: the replica that sent this call no longer takes its calls", name)
		}
		var a nestedAnswer
		if err := json.Unmarshal(m.Data, &a); err != nil {
			return "", fmt.Errorf("calling %s: the replica answered with what is not an answer: %w", name, err)
		}
		if a.Failed {
			return "", errors.New(a.Error)
		}
		return a.Output, nil
	case <-ctx.Done():
		return "", fmt.Errorf("calling %s: %w", name, ctx.Err())
	}
}
