package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/toolkit"
)

// The relay: a call's round trip to its worker, and the calls of tools and
// the HTTP requests that the tool makes meanwhile (toolkit.Call,
// toolkit.Do), served by the host one at a time within what is left of the
// caller's time. The pool (pool.go) hands
// out and replaces the workers; the relay talks to one.

// errNotSent says a request never reached its worker.
var errNotSent = errors.New("request not sent")

// callHost serves what a call asks of the host meanwhile: the tools it
// calls (nil: it may call none) and its HTTP requests.
type callHost struct {
	caller toolkit.Caller
	sender toolkit.Sender
}

// hostOf is the host of a call made with ctx: the Caller and Sender ctx
// carries (the toolbox's), or, where no Sender is given, one that sends
// GET and HEAD requests through client to the tool's declared hosts.
func hostOf(ctx context.Context, client *toolkit.Client, hosts []string) callHost {
	s := toolkit.SenderFrom(ctx)
	if s == nil {
		s = toolkit.ReadOnly(client, hosts)
	}
	return callHost{caller: toolkit.CallerFrom(ctx), sender: s}
}

// roundTrip sends req and waits for the worker's answer, its death, the
// call's limit plus grace, or the caller's cancellation. Meanwhile it serves
// the call's nested calls and HTTP requests with host. While a request
// waits for a person (toolkit.Pause), the call's clock stops, here and in
// the worker, and so do its callers'. An error means the worker is no
// longer usable.
func (p *Pool) roundTrip(ctx context.Context, w *proc, req request, source []byte, limit time.Duration, host callHost) (response, error) {
	w.calls++
	if err := w.send(req); err != nil {
		return response{}, fmt.Errorf("%w: %v", errNotSent, err)
	}
	// The call's own limit, as the worker keeps it: the nested calls end
	// with it. The hard one is past it, for a worker that does not answer.
	callCtx, callClock, stopCall := withClock(ctx, limit)
	defer stopCall()
	hardC := make(chan struct{})
	hard := newClock(limit+cancelGrace+killSlack, func() { close(hardC) })
	defer hard.stop()
	pause := func() func() {
		resumeHard, resumeCall := hard.pause(), callClock.pause()
		w.send(request{ID: req.ID, Op: opHold}) //nolint:errcheck // a dead worker is seen below
		resumeCallers := toolkit.Pause(ctx)
		var once sync.Once
		return func() {
			once.Do(func() {
				w.send(request{ID: req.ID, Op: opResume}) //nolint:errcheck // as above
				resumeCall()
				resumeHard()
				resumeCallers()
			})
		}
	}
	cancelled := ctx.Done()
	var afterCancel <-chan time.Time
	// At most one nested call runs at a time: the worker sends one and waits.
	var nested chan nestedReturn
	var stopNested context.CancelFunc
	defer func() {
		if stopNested != nil {
			stopNested()
		}
	}()
	for {
		select {
		case r, ok := <-w.resps:
			if !ok {
				return response{}, w.died(req.Tool, p.cfg)
			}
			if r.ID != req.ID {
				continue // the answer to a call given up on
			}
			if c := r.Call; c != nil {
				if nested != nil || (c.HTTP == nil && host.caller == nil) {
					// A worker never sends two at once; a call made
					// without a host of calls may make none.
					what := "calling " + c.Tool
					if c.HTTP != nil {
						what = c.HTTP.Method + " " + c.HTTP.URL
					}
					ret := nestedReturn{Seq: c.Seq, Failed: true, Error: fmt.Sprintf("%s: %v", what, toolkit.ErrNoCaller)}
					if nested != nil {
						ret.Error = what + ": a tool's calls and requests run one at a time"
					}
					w.send(request{ID: req.ID, Op: opReturn, Return: &ret}) //nolint:errcheck // a dead worker is seen above
					continue
				}
				// The callee, or the request, ends when the call does; a
				// callee gets what is left of the caller's limit.
				nctx := toolkit.WithPause(callCtx, pause)
				if c.HTTP != nil {
					nested, stopNested = startHTTP(nctx, host.sender, *c, p.cfg.MaxOutput)
				} else {
					nested, stopNested = startNested(nctx, host.caller, *c, p.cfg.MaxOutput)
				}
				continue
			}
			if r.NeedSource && req.Source == nil {
				req.Source = source
				if err := w.send(req); err != nil {
					return response{}, w.died(req.Tool, p.cfg)
				}
				continue
			}
			return r, nil
		case <-cancelled:
			// Ask the worker to cancel; kill it if the tool does not notice.
			cancelled = nil
			w.send(request{ID: req.ID, Op: opCancel}) //nolint:errcheck // a dead worker is seen below
			t := time.NewTimer(cancelGrace + killSlack)
			defer t.Stop()
			afterCancel = t.C
		case ret := <-nested:
			nested = nil
			stopNested()
			stopNested = nil
			if context.Cause(callCtx) == errCallTimeout {
				// The call's limit ended the request, here a moment before
				// the worker's own clock ends the call: handing the tool
				// "context canceled" now would let it return that as its
				// own error before its clock says timeout.
				continue
			}
			w.send(request{ID: req.ID, Op: opReturn, Return: &ret}) //nolint:errcheck // a dead worker is seen above
		case <-afterCancel:
			w.kill()
			return response{}, fmt.Errorf("tool %s: %w", req.Tool, ctx.Err())
		case <-hardC:
			w.kill()
			return response{}, &Error{Tool: req.Tool, Kind: adaptbot.FailTimeout, Msg: fmt.Sprintf("ran past its %v time limit; the worker was killed", limit)}
		}
	}
}

// startNested runs a tool's call of another tool on the host, until ctx
// or stop ends, and puts the answer in done.
func startNested(ctx context.Context, host toolkit.Caller, call nestedCall, maxOutput int) (done chan nestedReturn, stop context.CancelFunc) {
	ctx, stop = context.WithCancel(ctx)
	done = make(chan nestedReturn, 1)
	go func() {
		ret := nestedReturn{Seq: call.Seq}
		out, err := host.CallTool(ctx, call.Tool, call.Args)
		if err != nil {
			ret.Failed, ret.Error = true, clip.String(err.Error(), maxOutput)
		} else {
			ret.Output = out
		}
		done <- ret
	}()
	return done, stop
}

// startHTTP sends a tool's HTTP request through sender, until ctx or stop
// ends, and puts the answer in done: the response, unless it would not fit
// in a frame the worker reads.
func startHTTP(ctx context.Context, sender toolkit.Sender, call nestedCall, maxOutput int) (done chan nestedReturn, stop context.CancelFunc) {
	ctx, stop = context.WithCancel(ctx)
	done = make(chan nestedReturn, 1)
	go func() {
		ret := nestedReturn{Seq: call.Seq}
		resp, err := sender.Send(ctx, *call.HTTP)
		if err == nil {
			ret.Response = &resp
			if b, _ := json.Marshal(request{Op: opReturn, Return: &ret}); len(b) > maxFrame(maxOutput) {
				ret.Response, err = nil, fmt.Errorf("the response (%d bytes of body) is too large to hand to the tool", len(resp.Body))
			}
		}
		if err != nil {
			ret.Failed, ret.Error, ret.Blocked = true, clip.String(err.Error(), maxOutput), errors.Is(err, toolkit.ErrBlocked)
		}
		done <- ret
	}()
	return done, stop
}

// nestedLimit cuts a nested call's limit to what is left of its caller's
// (ctx's deadline), or fails at once when nothing is.
func nestedLimit(ctx context.Context, tool string, limit time.Duration) (time.Duration, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return limit, nil
	}
	left := time.Until(dl)
	if left <= 0 {
		return 0, &Error{Tool: tool, Kind: adaptbot.FailTimeout, Msg: "its caller had no time left to run it"}
	}
	return min(limit, left), nil
}
