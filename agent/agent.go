package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"adaptbot/graph"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// Node keys of the chat graph.
const (
	NodeClassifier  = "classifier"
	NodeGeneral     = "general"
	NodeExecute     = "execute"
	NodeSynthesizer = "synthesizer"
	NodeNeedTool    = "need_tool"
)

// Paths a message can take, besides the name of the tool it ran.
const (
	PathGeneral  = "general"
	PathNeedTool = "need_tool"
)

// Intents of a message.
const (
	IntentChat  = "CHAT"
	IntentBuild = "BUILD"
)

// Tools is where the agent finds tools; the registry is one.
type Tools interface {
	Serving() []registry.Tool
	Tool(name string) (registry.Tool, bool)
	// Len is how many tools serve; it must not copy them.
	Len() int
}

// Runner runs a tool; the sandbox is one.
type Runner interface {
	Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error)
}

// Remote calls a tool of an external MCP server, named "server/tool"; such
// tools come from Tools without Code.
type Remote interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (string, error)
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

// Builder creates, modifies or deletes tools for a BUILD message.
type Builder interface {
	Build(ctx context.Context, request string, progress func(BuildStep)) (*BuildResult, error)
}

// BuildStep is one progress report of a running build.
type BuildStep struct {
	Stage   string `json:"stage"`
	Message string `json:"message"`
}

// BuildResult is what a build did.
type BuildResult struct {
	Action   string `json:"action"`
	Tool     string `json:"tool"`
	OK       bool   `json:"ok"`
	Version  int    `json:"version,omitempty"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
	Summary  string `json:"summary,omitempty"`
}

// Config tunes the agent.
type Config struct {
	// Shortlist is how many tools the classifier sees at first (default 5).
	Shortlist int
	// MaxDiscovery caps the classifier's requests for more tools (default 5).
	MaxDiscovery int
	// Passive puts every tool in the classifier's prompt instead, for comparison.
	Passive bool
	// MaxSteps caps graph steps per message (default graph.DefaultMaxSteps).
	MaxSteps int
}

// Agent answers chat messages. It is safe for concurrent use.
type Agent struct {
	model   llm.Model
	tools   Tools
	finder  Finder
	runner  Runner
	remote  Remote
	builder Builder
	cfg     Config
	chat    *graph.Compiled[*state]
}

// Deps are what the agent needs; Model and Builder may be nil.
type Deps struct {
	Model   llm.Model
	Tools   Tools
	Finder  Finder
	Runner  Runner
	Remote  Remote
	Builder Builder
}

// New wires and compiles the chat graph. This is the one place that says how a
// message travels.
func New(d Deps, cfg Config) (*Agent, error) {
	if cfg.Shortlist <= 0 {
		cfg.Shortlist = 5
	}
	if cfg.MaxDiscovery < 0 {
		cfg.MaxDiscovery = 0
	} else if cfg.MaxDiscovery == 0 {
		cfg.MaxDiscovery = 5
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = graph.DefaultMaxSteps
	}
	a := &Agent{model: d.Model, tools: d.Tools, finder: d.Finder, runner: d.Runner, remote: d.Remote, builder: d.Builder, cfg: cfg}

	g := graph.New[*state]()
	g.AddNode(NodeClassifier, a.classify)
	g.AddNode(NodeGeneral, a.general)
	g.AddNode(NodeExecute, a.execute)
	g.AddNode(NodeSynthesizer, a.synthesize)
	g.AddNode(NodeNeedTool, a.needTool)

	g.AddEdge(graph.Start, NodeClassifier)
	g.AddBranch(NodeClassifier, func(_ context.Context, s *state) (string, error) {
		switch s.decision {
		case PathGeneral:
			return NodeGeneral, nil
		case PathNeedTool:
			return NodeNeedTool, nil
		}
		return NodeExecute, nil
	}, NodeGeneral, NodeExecute, NodeNeedTool)
	g.AddEdge(NodeGeneral, graph.End)
	g.AddEdge(NodeExecute, NodeSynthesizer)
	g.AddEdge(NodeSynthesizer, graph.End)
	g.AddEdge(NodeNeedTool, graph.End)

	compiled, err := g.Compile()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.chat = compiled
	return a, nil
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
}

// Discovery is one request the classifier made for more tools.
type Discovery struct {
	Domain    string   `json:"domain"`
	Operation string   `json:"operation"`
	Found     []string `json:"found"`
}

// Result is the answer to a message and how it was reached.
type Result struct {
	Response         string          `json:"response"`
	Intent           string          `json:"intent"`
	Path             string          `json:"path"`
	NeedTool         bool            `json:"need_tool"`
	ToolBuild        *BuildResult    `json:"tool_build"`
	OriginalQuestion string          `json:"original_question"`
	Trace            graph.Trace     `json:"trace"`
	Tool             string          `json:"tool,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	// Extraction and Execution say whether the tool's arguments were
	// extracted and whether it ran; nil when no tool was involved.
	Extraction  *bool       `json:"parameter_extraction_success"`
	Execution   *bool       `json:"tool_execution_success"`
	Error       string      `json:"error,omitempty"`
	Discovery   []Discovery `json:"discovery,omitempty"`
	ToolsLoaded []string    `json:"tools_loaded"`
	LLMCalls    int         `json:"llm_calls"`
	Usage       llm.Usage   `json:"usage"`
}

// state is one message's way through the graph; each Run gets a fresh one.
type state struct {
	req        Request
	model      llm.Model
	candidates []registry.Tool
	discovery  []Discovery
	decision   string
	tool       registry.Tool
	args       json.RawMessage
	extraction *bool
	execution  *bool
	output     string
	toolErr    error
	response   string
	needTool   bool
}

// Chat answers one message. A failure of the model or the graph comes back as
// an error; a failing tool does not: it is reported in the Result.
func (a *Agent) Chat(ctx context.Context, req Request) (*Result, error) {
	req.Message = strings.TrimSpace(req.Message)
	if req.Message == "" {
		return nil, errors.New("message is empty")
	}
	if a.model == nil {
		return nil, llm.ErrNoModel
	}
	meter := llm.NewMeter(a.model)
	res := &Result{Intent: IntentChat, OriginalQuestion: req.Message, ToolsLoaded: []string{}}
	defer func() { res.LLMCalls, res.Usage = meter.Counts() }()

	intent, err := a.intent(ctx, meter, req)
	if err != nil {
		return res, fmt.Errorf("intent: %w", err)
	}
	if intent == IntentBuild {
		res.Intent = IntentBuild
		if a.builder == nil {
			res.Response = "Building tools is not available: " + llm.ErrNoModel.Error()
			return res, nil
		}
		if !ChangesAllowed(ctx) {
			// The one authorization rule reaches chat too: no token, no build.
			res.Error = ErrForbidden.Error()
			res.Response = "I can't create, change or delete tools for you: " + ErrForbidden.Error() + "."
			return res, ErrForbidden
		}
		br, err := a.builder.Build(ctx, req.Message, req.Progress)
		res.ToolBuild = br
		if err != nil {
			res.Error = err.Error()
			res.Response = "I could not do that: " + err.Error()
			return res, nil
		}
		res.Response = br.Summary
		if !br.OK {
			res.Error = br.Error
			res.Response = "I could not build that tool: " + br.Error
		}
		return res, nil
	}

	s := &state{req: req, model: meter}
	s, trace, err := a.chat.Run(ctx, s, graph.WithMaxSteps(a.cfg.MaxSteps))
	res.Trace = trace
	if s == nil {
		return res, err
	}
	for _, t := range s.candidates {
		res.ToolsLoaded = append(res.ToolsLoaded, t.Name)
	}
	res.Discovery = s.discovery
	res.Extraction, res.Execution = s.extraction, s.execution
	if s.toolErr != nil {
		res.Error = s.toolErr.Error()
	}
	switch s.decision {
	case PathGeneral, PathNeedTool:
		res.Path = s.decision
	default:
		res.Path = s.tool.Name
		res.Tool = s.tool.Name
		res.Arguments = s.args
	}
	res.NeedTool = s.needTool
	res.Response = s.response
	if err != nil {
		return res, err
	}
	if l, ok := a.finder.(Learner); ok && res.Tool != "" && res.Execution != nil && *res.Execution {
		l.Learn(res.Tool, req.Message)
	}
	return res, nil
}

func boolPtr(b bool) *bool { return &b }
