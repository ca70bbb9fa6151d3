package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot/reqid"
	"adaptbot/sandbox"
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
}

// fleetReply is a worker's answer: an output, or the sandbox's verdict.
type fleetReply struct {
	Output string        `json:"output"`
	Took   time.Duration `json:"took"`
	Kind   sandbox.Kind  `json:"kind,omitempty"`
	Error  string        `json:"error,omitempty"`
	Worker string        `json:"worker,omitempty"`
}

// Fleet is the sandbox.Runner of a replica that sends its tool calls to the
// worker fleet (`adaptbot worker --nats URL`) over NATS, request and reply:
// any one worker of the queue group answers each call. A call that no
// worker takes, or whose worker dies or goes silent, fails with
// sandbox.KindUnavailable (503 at the edge) within the call's limit plus a
// short grace, and fails alone.
type Fleet struct {
	nc      *nats.Conn
	timeout time.Duration
	busy    atomic.Int64
	closed  atomic.Bool
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
	rep, err := f.ask(ctx, FleetRun, c.Tool, fleetRequest{Tool: c.Tool, Source: c.Source, Input: c.Input, Timeout: limit}, limit)
	if err != nil {
		return sandbox.Result{}, err
	}
	return sandbox.Result{Output: rep.Output, Duration: rep.Took}, nil
}

// Compile asks one worker of the fleet to load the tool without calling it.
func (f *Fleet) Compile(ctx context.Context, tool string, source []byte) error {
	_, err := f.ask(ctx, FleetCompile, tool, fleetRequest{Tool: tool, Source: source, Timeout: f.timeout}, f.timeout)
	return err
}

func (f *Fleet) ask(ctx context.Context, subject, tool string, req fleetRequest, limit time.Duration) (fleetReply, error) {
	unavailable := func(format string, args ...any) error {
		return &sandbox.Error{Tool: tool, Kind: sandbox.KindUnavailable, Msg: fmt.Sprintf(format, args...)}
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
	if rep.Kind != "" {
		return rep, &sandbox.Error{Tool: tool, Kind: rep.Kind, Msg: rep.Error}
	}
	return rep, nil
}

// Close stops sending calls; it leaves the connection to its owner.
func (f *Fleet) Close() error {
	f.closed.Store(true)
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
	handle := func(compile bool) nats.MsgHandler {
		return func(m *nats.Msg) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveOne(ctx, nc, runner, id, compile, m, log)
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

func serveOne(ctx context.Context, nc *nats.Conn, runner sandbox.Runner, id string, compile bool, m *nats.Msg, log *slog.Logger) {
	var req fleetRequest
	rep := fleetReply{Worker: id}
	if err := json.Unmarshal(m.Data, &req); err != nil {
		rep.Kind, rep.Error = sandbox.KindInput, "the request is not a fleet call: "+err.Error()
	} else {
		// The replica stops waiting at the limit plus its grace; so does
		// the call, queued or running, here.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), req.Timeout+fleetGrace)
		if rid := m.Header.Get("Adaptbot-Request-Id"); rid != "" {
			cctx = reqid.With(cctx, rid)
		}
		var err error
		if compile {
			err = runner.Compile(cctx, req.Tool, req.Source)
		} else {
			var res sandbox.Result
			res, err = runner.Run(cctx, sandbox.Call{Tool: req.Tool, Source: req.Source, Input: req.Input, Timeout: req.Timeout})
			rep.Output, rep.Took = res.Output, res.Duration
		}
		cancel()
		if err != nil {
			rep.Kind, rep.Error = sandbox.KindOf(err), err.Error()
			var se *sandbox.Error
			if errors.As(err, &se) {
				rep.Error = se.Msg
			}
			if rep.Kind == "" {
				rep.Kind = sandbox.KindUnavailable
			}
		}
	}
	b, err := json.Marshal(rep)
	if err == nil && int64(len(b)) > nc.MaxPayload() {
		rep.Output = ""
		rep.Kind, rep.Error = sandbox.KindOutput, fmt.Sprintf("the result is larger than NATS carries in one message (%d bytes)", nc.MaxPayload())
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
