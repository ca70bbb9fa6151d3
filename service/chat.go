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

// Chat answers one message. A chat may run tools and, when the message asks
// for one and the caller may, a build; that build is part of this request:
// its one row and trace are the chat's. s hears the answer's pieces and the
// build's progress.
func (s *Service) Chat(ctx context.Context, req adaptbot.ChatRequest, st adaptbot.Stream) (*adaptbot.ChatResult, error) {
	p, err := s.PrepareChat(ctx, req)
	return runNow(ctx, st, p, err)
}

// PrepareChat begins a chat: it refuses at once a caller who may not chat,
// and a message that is empty or a history the model cannot read. A server
// without a model refuses it when it runs: a door that streams says so in
// its stream, with the setting that turns one on.
func (s *Service) PrepareChat(ctx context.Context, req adaptbot.ChatRequest) (adaptbot.Prepared[*adaptbot.ChatResult], error) {
	req.Message = strings.TrimSpace(req.Message)
	ctx, o, err := s.start(ctx, "chat", "", identity.Chat)
	o.fallback, o.deadline, o.what = adaptbot.Upstream, s.d.Deadlines.Chat, "Chat"
	o.row.Query, o.row.Intent = req.Message, adaptbot.IntentChat
	o.rec.Kind, o.rec.Query = traces.Chat, req.Message
	if err == nil {
		err = checkChat(req)
	}
	o.inChat(req.Chat)
	return prepare(o, err, func(ctx context.Context, st adaptbot.Stream) (*adaptbot.ChatResult, error) {
		if s.d.Agent == nil {
			return nil, o.finish(llm.ErrNoModel)
		}
		ctx, cancel := context.WithTimeout(ctx, o.deadline)
		defer cancel()
		areq := agent.Request{Message: req.Message, History: lastOf(req.History), Progress: st.Progress, Stream: st.Text, Builder: chatBuilder{s}}
		res, err := s.d.Agent.Chat(ctx, areq)
		o.row = chatRow(o.row, res, err)
		if res == nil {
			return nil, o.finish(err)
		}
		res.Approvals = o.asks.records()
		out := &adaptbot.ChatResult{Answer: res, RequestID: o.id}
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
	})
}

// checkChat refuses a message that is empty or carries a history the model
// cannot read. A history longer than adaptbot.MaxHistory is refused where
// the message comes in (the edge, with its other sizes); the model is
// given its last MaxHistory messages.
func checkChat(req adaptbot.ChatRequest) error {
	if req.Message == "" {
		return adaptbot.Errorf(adaptbot.Invalid, `"message" is required: send {"message": "..."}`)
	}
	for i, m := range req.History {
		if m.Role != llm.User && m.Role != llm.Assistant {
			return adaptbot.Errorf(adaptbot.Invalid, `history[%d].role is %q; use "user" or "assistant"`, i, m.Role)
		}
	}
	return nil
}

// lastOf is the last adaptbot.MaxHistory messages of h.
func lastOf(h []llm.Message) []llm.Message {
	if len(h) > adaptbot.MaxHistory {
		return h[len(h)-adaptbot.MaxHistory:]
	}
	return h
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
