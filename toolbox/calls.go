package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"adaptbot"
	"adaptbot/registry"
	"adaptbot/toolkit"
)

// A tool may call other tools (toolkit.Call, toolkit.CallJSON). The call
// goes from the tool's sandbox to the host, which hands it to the toolbox:
// the caller's Local put a nestedCaller in the context it ran the tool
// with. The nestedCaller checks the call against the chain it belongs to —
// no cycle, no deeper than the Set's limit, a tool that exists — and calls
// the callee as any door would, through Tool.Call: its arguments validated
// against its schema, a local one in the sandbox under its own limits (cut
// to what is left of the caller's), an external one on its MCP server.

// DefaultMaxCallDepth is how deep a chain of tool calls may go unless
// LimitCallDepth says otherwise: a tool called from outside is at depth 0,
// a tool it calls at depth 1, and so on.
const DefaultMaxCallDepth = 4

// LimitCallDepth sets how deep a chain of tool calls may go
// (ADAPTBOT_MAX_CALL_DEPTH); n < 1 means DefaultMaxCallDepth. A call past
// it fails with a *ChainError.
func (s *Set) LimitCallDepth(n int) {
	if n < 1 {
		n = DefaultMaxCallDepth
	}
	s.maxDepth.Store(int64(n))
}

// MaxCallDepth returns how deep a chain of tool calls may go.
func (s *Set) MaxCallDepth() int { return int(s.maxDepth.Load()) }

// ChainError says the toolbox refused a tool's call of another tool before
// it ran: it would close a cycle, or go deeper than the limit.
type ChainError struct {
	// Caller calls Tool; Chain is every tool of the chain, outermost first,
	// Tool last.
	Caller string
	Tool   string
	Chain  []string
	// Cycle says Tool is already running in the chain; otherwise the chain
	// is deeper than Limit.
	Cycle bool
	Limit int
}

// Failure is FailRefused: the call never ran.
func (e *ChainError) Failure() adaptbot.Failure { return adaptbot.FailRefused }

func (e *ChainError) Error() string {
	chain := strings.Join(e.Chain, " → ")
	if e.Cycle {
		return fmt.Sprintf("tool %s cannot call %s: %s is a cycle (a tool may not call a tool that is already running in its chain)", e.Caller, e.Tool, chain)
	}
	return fmt.Sprintf("tool %s cannot call %s: %s is %d calls deep, past the limit of %d (ADAPTBOT_MAX_CALL_DEPTH)", e.Caller, e.Tool, chain, len(e.Chain)-1, e.Limit)
}

// frame is one call in a chain of tool calls, carried in the context of the
// call and of everything it does.
type frame struct {
	tool   string
	depth  int
	parent *frame
	call   *call // its entry in the call logs; nil for a source run outside the toolbox (Calling)
	held   atomic.Bool
}

// HeldBack marks the call whose context ctx is (or descends from), and
// the calls waiting for it, as held back by the person behind the
// request: a request of the tool's was denied, expired, could not be
// asked about, or named a secret the person has not set. A failure of
// such a call is no fault of the tools' code; its observers hear so
// (CallEvent.HeldBack).
func HeldBack(ctx context.Context) {
	for f := frameFrom(ctx); f != nil; f = f.parent {
		f.held.Store(true)
	}
}

type frameKey struct{}

func frameFrom(ctx context.Context) *frame {
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

// chain is the tools from the outermost call to f, then next.
func (f *frame) chain(next string) []string {
	var out []string
	for g := f; g != nil; g = g.parent {
		out = append(out, g.tool)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return append(out, next)
}

// running reports whether name is f's tool or one of its callers'.
func (f *frame) running(name string) bool {
	for g := f; g != nil; g = g.parent {
		if g.tool == name {
			return true
		}
	}
	return false
}

type overridesKey struct{}

// overridesFrom returns the tool versions that serve in place of the
// registry's in ctx (Calling), by name.
func overridesFrom(ctx context.Context) map[string]registry.Tool {
	m, _ := ctx.Value(overridesKey{}).(map[string]registry.Tool)
	return m
}

// Calling returns ctx for running the source of the tool name outside the
// toolbox — the generator's gate runs a candidate's examples, and the
// examples of the tools that use a changed tool, this way: the calls the
// source makes (toolkit.Call) go through the toolbox, checked as if name had
// been called from outside. overrides serve in place of the registry's
// versions of their tools for every call in the chain, so that a candidate
// version is tried before it serves.
func (s *Set) Calling(ctx context.Context, name string, overrides ...registry.Tool) context.Context {
	if len(overrides) > 0 {
		m := map[string]registry.Tool{}
		for k, v := range overridesFrom(ctx) {
			m[k] = v
		}
		for _, t := range overrides {
			m[t.Name] = t
		}
		ctx = context.WithValue(ctx, overridesKey{}, m)
	}
	f := &frame{tool: name}
	ctx = context.WithValue(ctx, frameKey{}, f)
	return toolkit.WithCaller(ctx, &nestedCaller{set: s, frame: f})
}

// Callee returns the tool a tool names in toolkit.Call: a local tool by its
// name, or an external MCP server's tool as "server/tool" or, as models
// and function lists write it, "server__tool".
func (s *Set) Callee(name string) (Tool, bool) {
	return s.callee(context.Background(), name)
}

func (s *Set) callee(ctx context.Context, name string) (Tool, bool) {
	if t, ok := overridesFrom(ctx)[name]; ok {
		return s.local(t), true
	}
	if t, ok := s.Tool(name); ok {
		return t, true
	}
	// "server__tool": the server's name may hold "__" too, so try each.
	for i := strings.Index(name, "__"); i > 0; {
		if t, ok := s.Tool(name[:i] + "/" + name[i+2:]); ok && t.Spec().Remote() {
			return t, true
		}
		j := strings.Index(name[i+2:], "__")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return nil, false
}

// nestedCaller is the toolkit.Caller of one local call: it runs the tools
// that call makes, one at a time.
type nestedCaller struct {
	set   *Set
	frame *frame
	one   sync.Mutex
}

var _ toolkit.Caller = (*nestedCaller)(nil)

// CallTool checks the call against its chain and runs the callee through
// its Tool.Call. A refused call fails at once: an unknown tool with
// NotFound's error, a cycle or a chain too deep with a *ChainError. Every
// call, refused or run, is recorded in the request's call logs and told to
// the Set's observers.
func (n *nestedCaller) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	n.one.Lock()
	defer n.one.Unlock()
	ctx = context.WithValue(ctx, frameKey{}, n.frame)
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("calling %s: %w", name, err)
	}
	t, ok := n.set.callee(ctx, name)
	var err error
	switch {
	case !ok:
		err = NotFound(name)
	case n.frame.running(t.Spec().Name):
		err = &ChainError{Caller: n.frame.tool, Tool: t.Spec().Name, Chain: n.frame.chain(t.Spec().Name), Cycle: true}
	case n.frame.depth+1 > n.set.MaxCallDepth():
		err = &ChainError{Caller: n.frame.tool, Tool: t.Spec().Name, Chain: n.frame.chain(t.Spec().Name), Limit: n.set.MaxCallDepth()}
	default:
		return t.Call(ctx, args)
	}
	spec := Spec{Name: name}
	if ok {
		spec = t.Spec()
	}
	n.set.invoke(ctx, spec, args, func(context.Context, json.RawMessage) (string, error) { return "", err })
	return "", err
}
