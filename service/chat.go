package service

import (
	"context"
	"errors"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/traces"
)

// MaxHistory caps the conversation a message may carry.
const MaxHistory = 50

// ChatResult is a chat's answer, how it was reached, and its request ID.
type ChatResult struct {
	*agent.Result
	RequestID string `json:"request_id"`
}

// Chat answers one message. A chat may run tools and, when the message asks
// for one and the caller may, a build; that build is part of this request:
// its one row and trace are the chat's. req.Builder is set by Chat.
func (s *Service) Chat(ctx context.Context, req agent.Request) (*ChatResult, error) {
	req.Message = strings.TrimSpace(req.Message)
	ctx, o, err := s.start(ctx, "chat", "", identity.Chat)
	o.fallback, o.deadline, o.what = adaptbot.Upstream, s.d.Deadlines.Chat, "Chat"
	o.row.Query, o.row.Intent = req.Message, adaptbot.IntentChat
	o.rec.Kind, o.rec.Query = traces.Chat, req.Message
	if err == nil {
		err = checkChat(req)
	}
	if err == nil && s.d.Agent == nil {
		err = llm.ErrNoModel
	}
	if err != nil {
		return nil, o.finish(err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	req.Builder = chatBuilder{s}
	res, err := s.d.Agent.Chat(ctx, req)
	o.row = chatRow(o.row, res, err)
	if res == nil {
		return nil, o.finish(err)
	}
	out := &ChatResult{Result: res, RequestID: o.id}
	o.rec.Tool = res.Tool
	o.rec.Result = marshal(out)
	if errors.Is(err, agent.ErrForbidden) {
		// The refusal is the answer: the person sees why, in the reply.
		err = &adaptbot.Error{Kind: adaptbot.Forbidden, Msg: res.Response, Err: err,
			Extra: map[string]any{"response": res.Response, "intent": res.Intent}}
	}
	if err := o.finish(err); err != nil {
		return nil, err
	}
	s.noteChat(o.id, o.who.Pseudonym, req.Message, res)
	return out, nil
}

// checkChat refuses a message that is empty or carries a history the model
// cannot take.
func checkChat(req agent.Request) error {
	if req.Message == "" {
		return adaptbot.Errorf(adaptbot.Invalid, `"message" is required: send {"message": "..."}`)
	}
	if len(req.History) > MaxHistory {
		return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: `"history" has too many messages; send at most the last 50`}
	}
	for i, m := range req.History {
		if m.Role != llm.User && m.Role != llm.Assistant {
			return adaptbot.Errorf(adaptbot.Invalid, `history[%d].role is %q; use "user" or "assistant"`, i, m.Role)
		}
	}
	return nil
}

// chatRow fills a chat's row from its result.
func chatRow(row benchmarks.Row, res *agent.Result, err error) benchmarks.Row {
	if err != nil {
		row.Error = err.Error()
	}
	if res == nil {
		return row
	}
	row.Intent = res.Intent
	// category is the first tool that ran (or general, need_tool); tools
	// lists every tool that ran, in order.
	row.Category = res.Path
	row.Tools = res.Tools
	row.ParamExtraction, row.ToolExecution = tri(res.Extraction), tri(res.Execution)
	if res.Error != "" && row.Error == "" {
		row.Error = res.Error
	}
	row.LLMCalls, row.PromptTokens, row.CompletionTokens = res.LLMCalls, res.Usage.PromptTokens, res.Usage.CompletionTokens
	row.DiscoveryRequests, row.ToolsLoaded = len(res.Discovery), len(res.ToolsLoaded)
	for _, st := range res.Trace {
		row.NodeTimes = append(row.NodeTimes, benchmarks.NodeTime{Node: st.Node, Duration: st.Duration})
	}
	if b := res.ToolBuild; b != nil {
		row.Category = "build_" + b.Action
		row.BuildAttempts = b.Attempts
		row.GenerationTime = time.Duration(res.TotalMs * float64(time.Millisecond))
	}
	return row
}

func tri(b *bool) benchmarks.Tri {
	if b == nil {
		return benchmarks.NA
	}
	return benchmarks.TriOf(*b)
}
