package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/toolkit"
)

// The relay: a call's round trip to its worker, and the calls of tools that
// the tool makes meanwhile (toolkit.Call), served by the host one at a
// time within what is left of the caller's time. The pool (pool.go) hands
// out and replaces the workers; the relay talks to one.

// errNotSent says a request never reached its worker.
var errNotSent = errors.New("request not sent")

// roundTrip sends req and waits for the worker's answer, its death, the
// call's limit plus grace, or the caller's cancellation. Meanwhile it serves
// the call's nested calls with host (nil: the call may make none). An error
// means the worker is no longer usable.
func (p *Pool) roundTrip(ctx context.Context, w *proc, req request, source []byte, limit time.Duration, host toolkit.Caller) (response, error) {
	w.calls++
	began := time.Now()
	if err := w.send(req); err != nil {
		return response{}, fmt.Errorf("%w: %v", errNotSent, err)
	}
	hard := time.NewTimer(limit + cancelGrace + killSlack)
	defer hard.Stop()
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
			if r.Call != nil {
				if nested != nil || host == nil {
					// A worker never sends two at once; a call made
					// without a host may make none.
					ret := nestedReturn{Seq: r.Call.Seq, Failed: true, Error: fmt.Sprintf("calling %s: %v", r.Call.Tool, toolkit.ErrNoCaller)}
					if nested != nil {
						ret.Error = fmt.Sprintf("calling %s: a tool's calls run one at a time", r.Call.Tool)
					}
					w.send(request{ID: req.ID, Op: opReturn, Return: &ret}) //nolint:errcheck // a dead worker is seen above
					continue
				}
				// The callee gets what is left of the caller's limit; it
				// ends when the call does.
				nested, stopNested = startNested(ctx, began.Add(limit), host, *r.Call, p.cfg.MaxOutput)
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
			w.send(request{ID: req.ID, Op: opReturn, Return: &ret}) //nolint:errcheck // a dead worker is seen above
		case <-afterCancel:
			w.kill()
			return response{}, fmt.Errorf("tool %s: %w", req.Tool, ctx.Err())
		case <-hard.C:
			w.kill()
			return response{}, &Error{Tool: req.Tool, Kind: adaptbot.FailTimeout, Msg: fmt.Sprintf("ran past its %v time limit; the worker was killed", limit)}
		}
	}
}

// startNested runs a tool's call of another tool on the host, until
// deadline or stop, and puts the answer in done.
func startNested(ctx context.Context, deadline time.Time, host toolkit.Caller, call nestedCall, maxOutput int) (done chan nestedReturn, stop context.CancelFunc) {
	ctx, stop = context.WithDeadline(ctx, deadline)
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
