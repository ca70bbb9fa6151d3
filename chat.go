package adaptbot

import (
	"context"
	"encoding/json"
	"time"
)

// The chat's contract: a message with its history (ChatRequest), or a
// whole conversation kept by the client (Conversation), and the answer
// with how it was reached (ChatResult). The chat's messages are those the
// model reads (package llm speaks the same types).

// MaxHistory caps the conversation a chat message may carry: a longer one
// is refused where the message comes in, and a conversation that a client
// keeps is cut to its last MaxHistory messages.
const MaxHistory = 50

// MessageRole is who speaks a message (package llm names them).
type MessageRole string

// Message is one turn of a conversation. An assistant message may carry the
// function calls the model made (Calls); each call's result follows as a
// tool message that names the call (CallID) and the function (Name). They
// go to every provider as its native tool-call and tool-result messages, so
// that each model call of a chat extends the previous one and a provider's
// prompt cache can serve the shared beginning.
type Message struct {
	Role    MessageRole `json:"role"`
	Content string      `json:"content"`
	// Calls are the function calls of an assistant message.
	Calls []FunctionCall `json:"calls,omitempty"`
	// CallID and Name say which call a tool message answers.
	CallID string `json:"call_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// Cache marks the end of a beginning worth caching: providers that
	// cache only where told (Anthropic) get a cache breakpoint after this
	// message; the others cache shared beginnings by themselves.
	Cache bool `json:"-"`
}

// Function is a function the model may call, with its parameters' JSON schema.
type Function struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// FunctionCall is the model's call of a Function. ID is the provider's
// name for the call, which its result must quote.
type FunctionCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Usage counts tokens as the provider reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// ChatRequest is one chat message with the conversation before it: the
// body of POST /chat.
type ChatRequest struct {
	Message string    `json:"message"`
	History []Message `json:"history,omitempty"`
	// Chat names the conversation, for the answer "allow for the rest of
	// this chat" (its later messages ask no more of the same tool version
	// and host); without it, that answer holds for this message alone.
	Chat string `json:"chat,omitempty"`
}

// Conversation is a turn of a chat as a client that keeps the conversation
// sends it (the OpenAI-compatible door): the answer is to the last user
// message, the earlier messages its history.
type Conversation struct {
	// Messages are the whole conversation, oldest first: system, user,
	// assistant (with its calls of Tools) and tool (a call's result, naming
	// the call in CallID) messages.
	Messages []Message
	// Tools are the client's own functions, which the client runs.
	Tools []Function
	// MaxTokens and Temperature, when set, bound and tune the model calls
	// that write the answer.
	MaxTokens   int
	Temperature *float64
}

// ChatResult is a chat's answer, how it was reached, and its request ID:
// the answer of POST /chat.
type ChatResult struct {
	*Answer
	RequestID string `json:"request_id"`
}

// Answer is the answer to a message and how it was reached (package
// agent's Result).
type Answer struct {
	Response         string     `json:"response"`
	Intent           string     `json:"intent"`
	Path             string     `json:"path"`
	NeedTool         bool       `json:"need_tool"`
	ToolBuild        *ChatBuild `json:"tool_build"`
	OriginalQuestion string     `json:"original_question"`
	Trace            []Step     `json:"trace"`
	TotalMs          float64    `json:"total_ms"`
	// Tool and Arguments are the first tool that ran and its arguments;
	// Tools lists every tool that ran, in order, each followed by the tools
	// it called (Step.Calls).
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Tools     []string        `json:"tools"`
	// Extraction and Execution say whether the tools' arguments were
	// valid and whether they all ran; nil when no tool was involved.
	Extraction  *bool       `json:"parameter_extraction_success"`
	Execution   *bool       `json:"tool_execution_success"`
	Error       string      `json:"error,omitempty"`
	Discovery   []Discovery `json:"discovery,omitempty"`
	ToolsLoaded []string    `json:"tools_loaded"`
	LLMCalls    int         `json:"llm_calls"`
	Usage       Usage       `json:"usage"`
	// Direct says the answer is the tools' output, shown as it is because
	// the model marked it so: no model call followed the tools.
	Direct bool `json:"direct,omitempty"`
	// Calls are the calls of the caller's client functions the model made:
	// the caller runs them and goes on with their results.
	Calls []FunctionCall `json:"client_calls,omitempty"`
	// Approvals are the approvals the tools' requests asked for, each with
	// its outcome and the request ID of its decision's row.
	Approvals []ApprovalRecord `json:"approvals,omitempty"`
}

// ChatBuild is what a build a chat asked for did.
type ChatBuild struct {
	Action   string `json:"action"`
	Tool     string `json:"tool"`
	OK       bool   `json:"ok"`
	Version  int    `json:"version,omitempty"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
	Summary  string `json:"summary,omitempty"`
}

// Discovery is one request the chat's classifier made for more tools.
type Discovery struct {
	Domain    string   `json:"domain"`
	Operation string   `json:"operation"`
	Found     []string `json:"found"`
}

// Step is one step of a message's way through the chat's graph: a node,
// or, in execute, one tool call.
type Step struct {
	Node string  `json:"node"`
	Ms   float64 `json:"ms"`
	// Tool, Arguments and Output describe a tool call; Output is cut to
	// 2 KiB.
	Tool             string          `json:"tool,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	Output           string          `json:"output,omitempty"`
	Error            string          `json:"error,omitempty"`
	LLMCalls         int             `json:"llm_calls,omitempty"`
	PromptTokens     int             `json:"prompt_tokens,omitempty"`
	CompletionTokens int             `json:"completion_tokens,omitempty"`
	Detail           string          `json:"detail,omitempty"`
	// Reasoning is what the model thought in this step's calls, where the
	// provider sent it as text; it is never part of the answer.
	Reasoning string `json:"reasoning,omitempty"`
	// Calls are the calls the tool made of other tools (toolkit.Call),
	// nested ones included, in the order they began.
	Calls []CallRecord `json:"calls,omitempty"`
	// Failure is how a tool call failed (FailureOf: error, panic, timeout,
	// ...); ErrorKind says the same under the key it had before, for one
	// release; Version is the version of the tool that ran.
	Failure   Failure `json:"failure,omitempty"`
	ErrorKind Failure `json:"error_kind,omitempty"`
	Version   int     `json:"version,omitempty"`
	// Round is the round of tool calls a tool step belongs to, from 1: the
	// calls of one round ran at once. StartMs and EndMs are when the call
	// began and ended, in milliseconds since the message began, so the
	// calls of a round show side by side.
	Round   int     `json:"round,omitempty"`
	StartMs float64 `json:"start_ms,omitempty"`
	EndMs   float64 `json:"end_ms,omitempty"`
	// Direct says the model marked the call's output as the answer.
	Direct bool `json:"direct,omitempty"`
	// Duration is Ms, and Start when the step began, for code.
	Duration time.Duration `json:"-"`
	Start    time.Time     `json:"-"`
}

// CallRecord is one call of a tool by another tool (toolkit.Call), as a
// trace shows it.
type CallRecord struct {
	// ID numbers the calls of a log from 1, in the order they began;
	// Parent is the ID of the call that made this one, 0 for a call made
	// from outside (or by a call that is not in this log).
	ID     int `json:"id"`
	Parent int `json:"parent,omitempty"`
	// Caller is the tool that made the call; empty from outside. Depth is
	// 0 for a call from outside, 1 for a tool it calls, and so on.
	Caller string `json:"caller,omitempty"`
	Depth  int    `json:"depth"`
	Tool   string `json:"tool"`
	// Version is a local tool's serving version; 0 for an external one.
	Version int `json:"version,omitempty"`
	// Tier is the sandbox's tier that ran a local tool's call (interpreted
	// or native); empty for an external tool, and for a call refused before
	// it reached the sandbox.
	Tier string `json:"tier,omitempty"`
	// Arguments as sent (a JSON string holding their start when they were
	// too long to keep); Output cut to the same length.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Kind      Failure         `json:"kind,omitempty"`
	Ms        float64         `json:"ms"`
	// Running says the call had not ended when the log was read.
	Running  bool          `json:"running,omitempty"`
	Duration time.Duration `json:"-"`
}

// FeedbackRequest is a person's thumbs up (1) or down (-1) on an answer,
// with an optional comment: the body of POST /api/requests/ID/feedback.
type FeedbackRequest struct {
	Score   int    `json:"score"`
	Comment string `json:"comment"`
}

// FeedbackResult says what a feedback did.
type FeedbackResult struct {
	RequestID string `json:"request_id"`
	Rated     string `json:"rated_request"`
	Score     int    `json:"score"`
	// Cases are the failure cases a thumbs-down added, one per tool call
	// of the answer, waiting for a person on the tool's page.
	Cases []FeedbackCase `json:"cases,omitempty"`
}

// FeedbackCase is a failure case a thumbs-down added.
type FeedbackCase struct {
	Tool string `json:"tool"`
	ID   string `json:"id"`
}

// ChatService answers messages, whatever the door: a message with its
// history (the chat page, POST /chat), a conversation a client keeps (the
// OpenAI-compatible door), and a person's rating of an answer. Each call
// is one operation, with one row and one trace.
type ChatService interface {
	// Chat answers one message; s hears the answer's pieces and the
	// progress of a build the message asks for.
	Chat(ctx context.Context, req ChatRequest, s Stream) (*ChatResult, error)
	// PrepareChat is Chat for a door that streams: it refuses at once what
	// it can (a message that is empty, a history the model cannot take),
	// and returns the chat, begun, for the door to run against its stream.
	PrepareChat(ctx context.Context, req ChatRequest) (Prepared[*ChatResult], error)
	// Converse answers the last user message of a conversation the client
	// keeps.
	Converse(ctx context.Context, c Conversation, s Stream) (*ChatResult, error)
	// PrepareConverse is Converse for a door that streams: it refuses at
	// once a conversation that is not one, a caller who may not chat and a
	// server without a model.
	PrepareConverse(ctx context.Context, c Conversation) (Prepared[*ChatResult], error)
	// Feedback rates the answer of the chat id, once, by its author.
	Feedback(ctx context.Context, id string, fb FeedbackRequest) (*FeedbackResult, error)
}
