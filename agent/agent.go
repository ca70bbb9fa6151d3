package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/graph"
	"adaptbot/llm"
	"adaptbot/reqid"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// Node keys of the chat graph.
const (
	NodeClassifier  = "classifier"
	NodeGeneral     = "general"
	NodeExecute     = "execute"
	NodeSynthesizer = "synthesizer"
	NodeNeedTool    = "need_tool"
	NodeBuild       = "build"
	// NodeDirect answers with the tools' output when the model marked it
	// as the answer (DirectFlag), without another model call.
	NodeDirect = "direct"
)

// Paths a message can take, besides the name of the tool it ran.
const (
	PathGeneral  = "general"
	PathNeedTool = "need_tool"
	PathBuild    = "build"
)

// Intents of a message.
const (
	IntentChat  = "CHAT"
	IntentBuild = "BUILD"
)

// Defaults of Config's limits left at zero.
const (
	// DefaultMaxSteps is how many rounds of tool calls a message may make.
	DefaultMaxSteps = 5
	// DefaultShortlist is how many tools the classifier sees at first.
	DefaultShortlist = 5
	// DefaultMaxDiscovery is how often the classifier may ask for more
	// tools in one message.
	DefaultMaxDiscovery = 5
)

// Tools is where the agent finds tools; toolbox.Box is one.
type Tools interface {
	Tool(name string) (toolbox.Tool, bool)
	Serving() []toolbox.Tool
	// Len is how many tools serve; it must not copy them.
	Len() int
}

// Finder shortlists tools for a request, best first.
type Finder interface {
	Find(ctx context.Context, query string, k int) []string
}

// Learner is a Finder that learns from use: after a tool ran without error
// for a message, the agent tells it, so that requests phrased like that one
// find the tool even when its description uses other words.
type Learner interface {
	Learn(tool, request string)
}

// Builder creates, modifies or deletes tools for a message that asks for it.
type Builder interface {
	Build(ctx context.Context, req BuildRequest, progress func(BuildStep)) (*BuildResult, error)
}

// BuildRequest is a build the classifier decided on: the user's words and
// the action, the tool's name and a summary, so the builder need not ask
// the model again. An empty Action leaves the decision to the builder.
type BuildRequest struct {
	Text    string `json:"request"`
	Action  string `json:"action"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
}

// BuildStep is one progress report of a running build: its stage and
// message (adaptbot.Event).
type BuildStep = adaptbot.Event

// BuildResult is what a build did (adaptbot.ChatBuild).
type BuildResult = adaptbot.ChatBuild

// Config tunes the agent.
type Config struct {
	// Shortlist is how many tools the classifier sees at first (default 5).
	Shortlist int
	// MaxDiscovery caps the classifier's requests for more tools (default 5).
	MaxDiscovery int
	// Passive puts every tool in the classifier's prompt instead, for comparison.
	Passive bool
	// MaxSteps caps the rounds of tool calls per message (default
	// DefaultMaxSteps): the first round, and each one the synthesizer
	// asks for after seeing the results.
	MaxSteps int
	// Log receives one line per message; nil discards.
	Log *slog.Logger
}

// Agent answers chat messages. It is safe for concurrent use.
type Agent struct {
	model  llm.Model
	tools  Tools
	finder Finder
	cfg    Config
	chat   *graph.Compiled[*state]
}

// Deps are what the agent needs; Model and Finder may be nil.
type Deps struct {
	Model  llm.Model
	Tools  Tools
	Finder Finder
}

// New wires and compiles the chat graph. This is the one place that says how a
// message travels:
//
//	classifier ─┬─ (text) ────────── general ─────────────── end
//	            ├─ (tool calls) ──── execute ─┬─ synthesizer ─┬─ end
//	            │                       ▲     │               │ (more calls)
//	            │                       └─────┼───────────────┘
//	            │                             └─ direct ──────── end
//	            │                          (output marked as the answer)
//	            ├─ (build request) ─ build ───────────────── end
//	            └─ (no tool fits) ── need_tool ───────────── end
//
// The classifier makes one model call; its requests for more tools
// (request_tools) loop inside it. The tool calls of one reply run at once.
// When the model marked every call of a round as the answer (DirectFlag)
// and each returned text, direct answers with it and no model is asked
// again.
func New(d Deps, cfg Config) (*Agent, error) {
	if cfg.Shortlist <= 0 {
		cfg.Shortlist = DefaultShortlist
	}
	if cfg.MaxDiscovery < 0 {
		cfg.MaxDiscovery = 0
	} else if cfg.MaxDiscovery == 0 {
		cfg.MaxDiscovery = DefaultMaxDiscovery
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{model: d.Model, tools: d.Tools, finder: d.Finder, cfg: cfg}

	g := graph.New[*state]()
	g.AddNode(NodeClassifier, a.classify)
	g.AddNode(NodeGeneral, a.general)
	g.AddNode(NodeExecute, a.execute)
	g.AddNode(NodeSynthesizer, a.synthesize)
	g.AddNode(NodeNeedTool, a.needTool)
	g.AddNode(NodeBuild, a.build)
	g.AddNode(NodeDirect, a.direct)

	g.AddEdge(graph.Start, NodeClassifier)
	g.AddBranch(NodeClassifier, func(_ context.Context, s *state) (string, error) {
		switch s.decision {
		case PathGeneral:
			return NodeGeneral, nil
		case PathNeedTool:
			return NodeNeedTool, nil
		case PathBuild:
			return NodeBuild, nil
		}
		return NodeExecute, nil
	}, NodeGeneral, NodeExecute, NodeNeedTool, NodeBuild)
	g.AddEdge(NodeGeneral, graph.End)
	g.AddBranch(NodeExecute, func(_ context.Context, s *state) (string, error) {
		if s.answer != "" {
			return NodeDirect, nil
		}
		return NodeSynthesizer, nil
	}, NodeDirect, NodeSynthesizer)
	g.AddEdge(NodeDirect, graph.End)
	g.AddBranch(NodeSynthesizer, func(_ context.Context, s *state) (string, error) {
		if len(s.pending) > 0 {
			return NodeExecute, nil
		}
		return graph.End, nil
	}, NodeExecute, graph.End)
	g.AddEdge(NodeNeedTool, graph.End)
	g.AddEdge(NodeBuild, graph.End)

	compiled, err := g.Compile()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.chat = compiled
	return a, nil
}

// Budget says how much work one message may take at most: model calls (the
// classifier, its requests for more tools, and per round of tool calls an
// argument retry and the synthesizer) and rounds of tool calls. Deadlines
// are derived from it.
func (a *Agent) Budget() (modelCalls, toolRounds int) {
	return 1 + a.cfg.MaxDiscovery + 2*a.cfg.MaxSteps, a.cfg.MaxSteps
}

// Model returns the model in use, or nil.
func (a *Agent) Model() llm.Model { return a.model }

// Request is one chat message with the conversation before it.
type Request struct {
	Message string        `json:"message"`
	History []llm.Message `json:"history,omitempty"`
	// Progress, when set, hears each step of a build the message asks
	// for, as it happens.
	Progress func(BuildStep) `json:"-"`
	// Stream, when set, hears the answer's text piece by piece as the
	// model writes it (a direct answer, or the answer after the tools
	// ran). The Result still holds the whole answer.
	Stream func(text string) `json:"-"`
	// Builder runs a build the message asks for, on behalf of its caller
	// (who may not be allowed: then it returns an error that is
	// ErrForbidden). Nil: building is not available here.
	Builder Builder `json:"-"`
	// Client are functions the caller runs itself (the OpenAI-compatible
	// door's tools), offered beside AdaptBot's: a call of one ends the
	// message, and comes back in Result.Calls.
	Client []llm.Function `json:"-"`
	// After are the messages that follow Message: the caller's calls of
	// its Client functions and their results, from which the chat goes on.
	After []llm.Message `json:"-"`
	// MaxTokens and Temperature, when set, bound and tune the model calls
	// that write the answer.
	MaxTokens   int      `json:"-"`
	Temperature *float64 `json:"-"`
}

// Discovery is one request the classifier made for more tools.
type Discovery = adaptbot.Discovery

// Step is one step of a message's way through the graph: a node, or, in
// execute, one tool call (adaptbot.Step).
type Step = adaptbot.Step

// Result is the answer to a message and how it was reached
// (adaptbot.Answer).
type Result = adaptbot.Answer

// Chat answers one message. A failure of the model or the graph comes back as
// an error; a failing tool does not: it is reported in the Result. A build
// the caller may not make (the Builder said ErrForbidden) returns that error
// with a Result that says so.
func (a *Agent) Chat(ctx context.Context, req Request) (*Result, error) {
	began := time.Now()
	req.Message = strings.TrimSpace(req.Message)
	if req.Message == "" {
		return nil, errors.New("message is empty")
	}
	if a.model == nil {
		return nil, llm.ErrNoModel
	}
	meter := llm.NewMeter(a.model)
	res := &Result{Intent: IntentChat, OriginalQuestion: req.Message, ToolsLoaded: []string{}, Tools: []string{}, Trace: []Step{}}
	defer func() {
		res.LLMCalls, res.Usage = meter.Counts()
		res.TotalMs = traces.Millis(time.Since(began))
	}()

	s := &state{req: req, model: a.newClientModel(meter, req), began: began}
	var last llm.Usage
	var lastCalls int
	hook := func(st graph.Step) {
		calls, u := meter.Counts()
		if len(s.detail) > 0 {
			res.Trace = append(res.Trace, s.detail...)
			s.detail = nil
		} else {
			res.Trace = append(res.Trace, Step{Node: st.Node, Ms: st.Millis(), Duration: st.Duration, Error: st.Err, Detail: s.note,
				LLMCalls: calls - lastCalls, PromptTokens: u.PromptTokens - last.PromptTokens, CompletionTokens: u.CompletionTokens - last.CompletionTokens,
				Reasoning: meter.TakeReasoning()})
		}
		s.note = ""
		lastCalls, last = calls, u
	}
	_, _, err := a.chat.Run(ctx, s, graph.WithMaxSteps(2*a.cfg.MaxSteps+4), graph.WithStepHook(hook))

	for _, t := range s.candidates {
		res.ToolsLoaded = append(res.ToolsLoaded, t.Spec().Name)
	}
	res.Discovery = s.discovery
	res.NeedTool = s.needTool
	res.Response = s.response
	res.ToolBuild = s.built
	res.Direct = s.directed
	switch s.decision {
	case PathGeneral, PathNeedTool:
		res.Path = s.decision
	case PathBuild:
		res.Intent = IntentBuild
	}
	a.summarizeRuns(res, s.runs)
	if res.Calls = clientCalls(s.model); len(res.Calls) > 0 {
		res.Path = PathClientTools
	}
	if res.Error == "" && s.buildErr != "" {
		res.Error = s.buildErr
	}
	if err == nil && s.err != nil {
		err = s.err
	}
	a.cfg.Log.Info("chat", "request_id", reqid.From(ctx), "path", res.Path, "tools", res.Tools,
		"ms", traces.Millis(time.Since(began)), "err", err)
	if err != nil {
		return res, err
	}
	if l, ok := a.finder.(Learner); ok && res.Tool != "" && res.Execution != nil && *res.Execution {
		l.Learn(res.Tool, req.Message)
	}
	return res, nil
}

// summarizeRuns fills the Result's tool fields from every call made.
func (a *Agent) summarizeRuns(res *Result, runs []run) {
	if len(runs) == 0 {
		return
	}
	extracted, executed, anyRan := true, true, false
	for _, r := range runs {
		if !r.valid {
			extracted = false
		}
		if r.ran {
			anyRan = true
			res.Tools = append(res.Tools, r.tool)
			res.Tools = append(res.Tools, r.nested...)
			if res.Tool == "" {
				res.Tool, res.Arguments = r.tool, jsonOrString(r.args)
			}
		}
		if r.err != nil {
			executed = false
			if res.Error == "" {
				res.Error = r.err.Error()
			}
		}
	}
	if res.Tool == "" {
		// No call ran: name the first one tried. Its arguments may be the
		// model's invalid JSON, kept as text so that the Result encodes.
		res.Tool, res.Arguments = runs[0].tool, jsonOrString(runs[0].args)
	}
	res.Path = res.Tool
	res.Extraction = &extracted
	if anyRan {
		res.Execution = &executed
	}
}
