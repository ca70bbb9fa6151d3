package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/traces"
)

// Converse is the chat of a client that keeps the conversation itself and
// sends it whole with each turn (the OpenAI-compatible door, /v1): the
// answer is AdaptBot's answer to the last user message, the earlier
// messages its history. A client's tools are offered beside AdaptBot's; a
// call of one ends the turn (ChatResult.Calls), and the client's next turn
// carries the calls and their results after the user message, from which
// the chat goes on.
//
// Without a conversation of its own on the server, a build is agreed in
// words: when no tool fits, the answer offers to build one (BuildOffer),
// and a next user message that agrees ("yes", "build it", /build) builds it,
// says its progress as text, and answers the original question once the
// tool serves. Whoever may not build is told so in the answer. It is one
// operation: one row, one trace, whatever it did.
//
// The stream's Text, when set, hears every piece of the answer's text as
// it is written, the build's progress included; the pieces make up the
// answer.
func (s *Service) Converse(ctx context.Context, c adaptbot.Conversation, st adaptbot.Stream) (*adaptbot.ChatResult, error) {
	p, err := s.PrepareConverse(ctx, c)
	return runNow(ctx, st, p, err)
}

// PrepareConverse begins Converse: it refuses at once a conversation that
// is not a chat (split), a caller who may not chat, and a server without a
// model, so that a door that streams answers them with a status of their
// own.
func (s *Service) PrepareConverse(ctx context.Context, c adaptbot.Conversation) (adaptbot.Prepared[*adaptbot.ChatResult], error) {
	ctx, o, err := s.start(ctx, "chat", "", identity.Chat)
	o.fallback, o.deadline, o.what = adaptbot.Upstream, s.d.Deadlines.Chat, "Chat"
	o.row.Intent, o.rec.Kind = adaptbot.IntentChat, traces.Chat
	var t turn
	if err == nil {
		t, err = split(c)
		o.row.Query, o.rec.Query = t.query(), t.query()
	}
	if err == nil && s.model() == nil {
		err = llm.ErrNoModel
	}
	return prepare(o, err, func(ctx context.Context, st adaptbot.Stream) (*adaptbot.ChatResult, error) {
		return s.converse(ctx, o, t, st)
	})
}

// converse carries out a conversation's turn t, begun as o.
func (s *Service) converse(ctx context.Context, o *op, t turn, st adaptbot.Stream) (*adaptbot.ChatResult, error) {
	t.req.Stream = st.Text
	var err error
	out := &writer{stream: st.Text}
	var res *agent.Result
	if t.build != nil {
		o.deadline += s.d.Deadlines.Build
		ctx, cancel := context.WithTimeout(ctx, o.deadline)
		defer cancel()
		res, err = s.buildThenAnswer(ctx, t, out)
	} else {
		ctx, cancel := context.WithTimeout(ctx, o.deadline)
		defer cancel()
		res, err = s.answer(ctx, t.req, out)
		if res != nil && res.NeedTool {
			res.Response = offerBuild(identity.From(ctx))
		}
	}
	o.row = chatRow(o.row, res, err)
	if res == nil {
		return nil, o.finish(err)
	}
	if errors.Is(err, agent.ErrForbidden) {
		// The refusal is the answer, as a client of this door reads it:
		// the row still says what was refused.
		o.row.ErrorKind, err = string(adaptbot.Forbidden), nil
	}
	if b := t.build; b != nil {
		o.row.Query, o.row.Intent = t.query(), adaptbot.IntentBuild
		o.row.Category, o.row.GenerationTime = "build_create", b.took
		if res.ToolBuild != nil {
			o.row.Category, o.row.BuildAttempts = "build_"+res.ToolBuild.Action, res.ToolBuild.Attempts
		}
		if b.kind != "" {
			o.row.Error, o.row.ErrorKind = res.Response, string(b.kind)
		}
	}
	out.finish(res.Response)
	res.Response = out.text(res.Response)
	res.Approvals = o.asks.records()
	result := &adaptbot.ChatResult{Answer: res, RequestID: o.id}
	o.rec.Tool = res.Tool
	o.rec.Result = marshal(result)
	if err := o.finish(err); err != nil {
		return nil, err
	}
	// A chain of tools counts toward a skill whichever door the chat came
	// through.
	s.noteChat(o.id, o.who.Pseudonym, t.query(), res)
	return result, nil
}

// BuildOffer is how an answer offers to build a tool; a later user message
// that agrees with an assistant message holding it starts the build.
const BuildOffer = `I don't have a tool that can do that yet. I can build one: answer "yes" (or /build) and I will build it, then answer your question.`

// offerMark is the part of BuildOffer a conversation is searched for.
const offerMark = `answer "yes" (or /build)`

// offerBuild is the answer of a question no tool fits: the offer, or why
// who cannot take it.
func offerBuild(who identity.Identity) string {
	if !who.Can(identity.Build) {
		return "I don't have a tool that can do that yet, and I cannot build one for you: " + identity.Refusal(who, identity.Build) + "."
	}
	return BuildOffer
}

// turn is a Conversation taken apart: the chat request for the agent, or
// a build agreed to and the question to answer after it.
type turn struct {
	req   agent.Request
	build *agreed
}

// agreed is a build the user agreed to.
type agreed struct {
	// text is what to build; question, when its Message is set, is what
	// to answer once the tool serves.
	text     string
	question agent.Request
	// kind is how the build ended when it did not serve (a refusal, a
	// failed gate), for the row; took is how long it took.
	kind adaptbot.Kind
	took time.Duration
}

// query is the turn's words for its row and trace: the question, or what
// was built.
func (t turn) query() string {
	if t.build != nil {
		if t.build.question.Message != "" {
			return t.build.question.Message
		}
		return t.build.text
	}
	return t.req.Message
}

// split takes a conversation apart, refusing one that is not a chat: no
// messages, an unknown role, no user message, a tool result for a call no
// assistant message made, or messages after the last user message other
// than calls and their results.
func split(c adaptbot.Conversation) (turn, error) {
	msgs := c.Messages
	if len(msgs) == 0 {
		return turn{}, invalidParam("messages", `"messages" is empty: send at least one {"role": "user", "content": "..."}`)
	}
	// Calls not yet answered by a tool message, and their functions.
	open := map[string]string{}
	last := -1
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.System:
		case llm.User:
			last, open = i, map[string]string{}
		case llm.Assistant:
			if len(m.Calls) > 0 {
				open = map[string]string{}
				for _, call := range m.Calls {
					open[call.ID] = call.Name
				}
			}
		case llm.Tool:
			name, ok := open[m.CallID]
			if !ok {
				return turn{}, invalidParam(fmt.Sprintf("messages[%d].tool_call_id", i), fmt.Sprintf(
					"messages[%d] is a tool result for the call %q, but no assistant message before it made that call", i, m.CallID))
			}
			delete(open, m.CallID)
			m.Name = name
		default:
			return turn{}, invalidParam(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf(
				`messages[%d].role is %q; use "system", "user", "assistant" or "tool"`, i, m.Role))
		}
	}
	if last < 0 {
		return turn{}, invalidParam("messages", `"messages" has no user message: the answer is to the last one`)
	}
	for i := last + 1; i < len(msgs); i++ {
		if m := msgs[i]; m.Role != llm.Tool && (m.Role != llm.Assistant || len(m.Calls) == 0) {
			return turn{}, invalidParam(fmt.Sprintf("messages[%d]", i), fmt.Sprintf(
				"messages[%d] is a %s message after the last user message: only tool calls and their results may follow it", i, m.Role))
		}
	}
	if len(open) > 0 && last < len(msgs)-1 {
		return turn{}, invalidParam("messages", fmt.Sprintf(
			"the last assistant message calls %d tool(s) whose results are missing: answer each call with a tool message", len(open)))
	}
	text := strings.TrimSpace(msgs[last].Content)
	if text == "" {
		return turn{}, invalidParam(fmt.Sprintf("messages[%d].content", last), "the last user message is empty")
	}
	req := agent.Request{Message: text, History: history(msgs[:last]), After: msgs[last+1:],
		Client: c.Tools, MaxTokens: c.MaxTokens, Temperature: c.Temperature}
	t := turn{req: req}
	if len(req.After) == 0 {
		t.build = agreement(msgs[:last], text)
	}
	return t, nil
}

// history is the text of the user's and the assistant's messages, the last
// adaptbot.MaxHistory of them: the calls and results of earlier turns stay with
// the client.
func history(msgs []llm.Message) []llm.Message {
	var h []llm.Message
	for _, m := range msgs {
		if (m.Role == llm.User || m.Role == llm.Assistant) && strings.TrimSpace(m.Content) != "" {
			h = append(h, llm.Message{Role: m.Role, Content: m.Content})
		}
	}
	return lastOf(h)
}

// agreement returns the build a user message agrees to, or nil: a yes to
// the offer in the assistant message before it, or /build (with what to
// build, or for the question before it).
func agreement(before []llm.Message, text string) *agreed {
	rest, command := cutCommand(text)
	offered := len(before) > 0 && before[len(before)-1].Role == llm.Assistant && strings.Contains(before[len(before)-1].Content, offerMark)
	if !command && !(offered && agrees(text)) {
		return nil
	}
	var question agent.Request
	for i := len(before) - 1; i >= 0; i-- {
		if before[i].Role == llm.User {
			question = agent.Request{Message: strings.TrimSpace(before[i].Content), History: history(before[:i])}
			break
		}
	}
	what := rest
	if what == "" {
		what = question.Message
	}
	if what == "" {
		return nil // "/build" alone, first thing: the model answers it
	}
	return &agreed{text: what, question: question}
}

// cutCommand reports whether text is the /build command, and what follows it.
func cutCommand(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/build")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// agrees reports whether a reply to the offer says yes.
func agrees(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	t = strings.TrimRight(t, ".!? ")
	switch t {
	case "yes", "y", "yes please", "yes, please", "yep", "yeah", "sure", "ok", "okay", "please", "please do", "do it", "go ahead",
		"build it", "yes build it", "yes, build it", "build", "build one", "yes, build one", "make it", "create it":
		return true
	}
	return false
}

// invalidParam is a refusal of a request's field, which the error names.
func invalidParam(param, msg string) *adaptbot.Error {
	return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: msg, Extra: map[string]any{"param": param}}
}

// answer runs the agent on req, its answer streamed to out.
func (s *Service) answer(ctx context.Context, req agent.Request, out *writer) (*agent.Result, error) {
	req.Builder = chatBuilder{s}
	req.Stream = out.piece
	if req.Progress == nil && out.stream != nil {
		req.Progress = func(st agent.BuildStep) { out.say("- " + st.Message + "\n") }
	}
	return s.d.Agent.Chat(ctx, req)
}

// buildThenAnswer builds the tool the user agreed to, saying its progress,
// then answers the question it was for. A caller who may not build, a
// server that cannot, and a build that fails are told in the answer.
func (s *Service) buildThenAnswer(ctx context.Context, t turn, out *writer) (*agent.Result, error) {
	b := t.build
	told := func(kind adaptbot.Kind, text string) (*agent.Result, error) {
		b.kind = kind
		return &agent.Result{Response: text, Intent: agent.IntentBuild, Path: agent.PathBuild, Tools: []string{}, ToolsLoaded: []string{}, Trace: []agent.Step{}}, nil
	}
	who := identity.From(ctx)
	if err := identity.Permit(who, identity.Build); err != nil {
		return told(adaptbot.KindOf(err), "I cannot build tools for you: "+err.Error()+". Nothing was built.")
	}
	if err := s.buildable(generator.Request{Text: b.text}); err != nil {
		e := classify(err, 0, adaptbot.Internal)
		return told(e.Kind, "I cannot build tools here: "+e.Msg)
	}
	out.say("Building a tool for that…\n")
	gres, err := s.build(ctx, generator.Request{Text: b.text}, func(ev generator.Event) {
		out.say("- " + ev.Message + "\n")
	})
	if err != nil {
		return nil, err
	}
	built := &agent.BuildResult{Action: string(gres.Op), Tool: gres.Tool, OK: gres.OK, Version: gres.Version,
		Attempts: gres.Attempts, Error: gres.Error, Summary: gres.Summary}
	b.took = gres.Duration
	var res *agent.Result
	switch {
	case !gres.OK:
		res, _ = told(adaptbot.Failed, "I could not build that tool: "+gres.Error)
	case gres.Pending:
		res, _ = told("", fmt.Sprintf("I built %s (version %d). Review is on, so it waits for an admin's approval before it serves: ask again once it is approved.", gres.Tool, gres.Version))
	case b.question.Message == "":
		res, _ = told("", gres.Summary)
	default:
		out.say("\nNow, your question:\n\n")
		out.answerBegins()
		res, err = s.answer(ctx, b.question, out)
		if res == nil {
			return nil, err
		}
		if res.NeedTool {
			res.Response = "The new tool did not fit the question after all: " + BuildOffer
		}
	}
	res.ToolBuild = built
	res.Intent = agent.IntentBuild
	return res, err
}

// writer gathers what the answer says before the model's words (a build's
// progress) and streams every piece when asked to.
type writer struct {
	stream func(string)
	said   strings.Builder // text before the answer
	// answered is set once a piece of the model's answer has been streamed.
	answered bool
}

// say adds text the server writes (progress) to the answer.
func (w *writer) say(text string) {
	w.said.WriteString(text)
	if w.stream != nil {
		w.stream(text)
	}
}

// piece streams a piece of the model's answer.
func (w *writer) piece(text string) {
	w.answered = true
	if w.stream != nil {
		w.stream(text)
	}
}

// answerBegins marks where the server's words end and the model's begin.
func (w *writer) answerBegins() { w.answered = false }

// finish streams the answer whole if none of it was streamed (an offer, a
// refusal, a failed tool's words).
func (w *writer) finish(answer string) {
	if !w.answered && w.stream != nil && answer != "" {
		w.stream(answer)
	}
}

// text is the whole answer: the server's words, then the model's.
func (w *writer) text(answer string) string { return w.said.String() + answer }
