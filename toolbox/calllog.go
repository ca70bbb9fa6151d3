package toolbox

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/reqid"
	"adaptbot/toolkit"
)

// Every call made through the toolbox — by any door, or by a tool calling
// another (toolkit.Call) — is seen in two ways:
//
//   - the call log of the request, when its context carries one
//     (WithCallLog): the calls in the order they began, each with its
//     depth and its caller, for the request's trace;
//   - the Set's observers (OnCall), told after every call ends: for the
//     failure cases a repair reads.

// MaxRecordedText caps the arguments and output a CallRecord keeps.
const MaxRecordedText = 2 << 10

// CallRecord is one call as a trace shows it (adaptbot.CallRecord).
type CallRecord = adaptbot.CallRecord

// CallEvent is one ended call, as observers are told of it.
type CallEvent struct {
	Tool    string
	Version int
	// Args are the arguments as sent, whole.
	Args json.RawMessage
	Err  error
	// Depth and Caller place the call in its chain: 0 and "" for a call
	// made from outside.
	Depth  int
	Caller string
	// RequestID is the request's ID (reqid) when its context has one.
	RequestID string
	// HeldBack says the person behind the request held one of the call's
	// requests back (HeldBack): a failure then is no fault of the tool.
	HeldBack bool
}

// OnCall registers fn, called after every call made through the Set,
// from outside or nested, refused ones included, on the calling goroutine
// and with the call's context (its request ID, the caller's identity and
// door). fn must not block for long.
func (s *Set) OnCall(fn func(ctx context.Context, ev CallEvent)) {
	s.omu.Lock()
	s.observers = append(s.observers, fn)
	s.omu.Unlock()
}

// CallLog is the record of every call made through the toolbox for one
// request: those its context (WithCallLog) reached, nested ones included.
// It is safe for concurrent use.
type CallLog struct {
	parent *CallLog
	mu     sync.Mutex
	calls  []*call
}

// call is one call, shared by the logs that record it.
type call struct {
	parent *call
	caller string
	depth  int
	tool   string
	args   json.RawMessage

	mu      sync.Mutex
	version int
	tier    string
	done    bool
	output  string
	err     string
	kind    adaptbot.Failure
	took    time.Duration
}

type logKey struct{}

// WithCallLog returns a context that records the calls made with it, and
// the log. A log made inside another's context records its calls in both:
// the agent keeps one per step, inside the request's.
func WithCallLog(ctx context.Context) (context.Context, *CallLog) {
	l := &CallLog{parent: CallLogFrom(ctx)}
	return context.WithValue(ctx, logKey{}, l), l
}

// CallLogFrom returns the call log of ctx, or nil.
func CallLogFrom(ctx context.Context) *CallLog {
	l, _ := ctx.Value(logKey{}).(*CallLog)
	return l
}

// Calls returns the calls recorded so far, in the order they began.
func (l *CallLog) Calls() []CallRecord {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	calls := slices.Clone(l.calls)
	l.mu.Unlock()
	ids := make(map[*call]int, len(calls))
	out := make([]CallRecord, 0, len(calls))
	for i, c := range calls {
		ids[c] = i + 1
		c.mu.Lock()
		r := CallRecord{ID: i + 1, Parent: ids[c.parent], Caller: c.caller, Depth: c.depth, Tool: c.tool,
			Version: c.version, Tier: c.tier, Arguments: recordedArgs(c.args), Output: clip.String(c.output, MaxRecordedText),
			Error: c.err, Kind: c.kind, Duration: c.took, Ms: float64(c.took.Microseconds()) / 1000, Running: !c.done}
		c.mu.Unlock()
		out = append(out, r)
	}
	return out
}

// Nested returns the calls recorded so far that tools made (depth 1 and
// more), in the order they began.
func (l *CallLog) Nested() []CallRecord {
	var out []CallRecord
	for _, r := range l.Calls() {
		if r.Depth > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Tiers returns the tiers that ran the calls recorded so far (see
// CallRecord.Tier), each once, in the order first seen: none when no local
// tool ran.
func (l *CallLog) Tiers() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var tiers []string
	for _, c := range l.calls {
		c.mu.Lock()
		t := c.tier
		c.mu.Unlock()
		if t != "" && !slices.Contains(tiers, t) {
			tiers = append(tiers, t)
		}
	}
	return tiers
}

func (l *CallLog) add(c *call) {
	for ; l != nil; l = l.parent {
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
	}
}

// invoke runs one call of the tool spec through the toolbox: it places the
// call in its chain, records it in the request's call logs, runs it (a
// local tool with a nestedCaller for the calls it makes) and tells the
// observers.
func (s *Set) invoke(ctx context.Context, spec Spec, args json.RawMessage, run func(context.Context, json.RawMessage) (string, error)) (string, error) {
	parent := frameFrom(ctx)
	f := &frame{tool: spec.Name}
	c := &call{tool: spec.Name, version: spec.Version, args: args}
	if parent != nil {
		f.parent, f.depth = parent, parent.depth+1
		c.parent, c.caller, c.depth = parent.call, parent.tool, f.depth
	}
	f.call = c
	CallLogFrom(ctx).add(c)
	ctx = context.WithValue(ctx, frameKey{}, f)
	if !spec.Remote() {
		ctx = toolkit.WithCaller(ctx, &nestedCaller{set: s, frame: f})
	}
	began := time.Now()
	out, err := run(ctx, args)
	took := time.Since(began)
	kind := adaptbot.FailureOf(err)
	c.mu.Lock()
	c.done, c.output, c.kind, c.took = true, out, kind, took
	if err != nil {
		c.err = err.Error()
	}
	c.mu.Unlock()

	s.omu.RLock()
	observers := s.observers
	s.omu.RUnlock()
	if len(observers) > 0 {
		ev := CallEvent{Tool: spec.Name, Version: spec.Version, Args: args, Err: err, Depth: f.depth, RequestID: reqid.From(ctx), HeldBack: f.held.Load()}
		if parent != nil {
			ev.Caller = parent.tool
		}
		for _, fn := range observers {
			fn(ctx, ev)
		}
	}
	return out, err
}

// recordedArgs keeps arguments for a record: as they are, or, when longer
// than MaxRecordedText or not JSON, their start as a JSON string.
func recordedArgs(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	if len(args) <= MaxRecordedText && json.Valid(args) {
		return args
	}
	b, _ := json.Marshal(clip.String(string(args), MaxRecordedText))
	return b
}
