package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/llm"
	"adaptbot/reqid"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// state is one message's way through the graph; each Run gets a fresh one.
type state struct {
	req        Request
	model      llm.Model
	candidates []toolbox.Tool
	functions  []llm.Function // the candidates offered as functions
	// offered maps the name of each function offered to the tool it
	// calls: function names are encoded (toolbox.FunctionName) and cannot
	// be decoded on their own.
	offered   map[string]string
	discovery []Discovery
	// msgs is the chat's one conversation: the system prompt, the history
	// and the message, then every call and result. Each model call of the
	// message sends it whole, with every function offered so far, so each
	// call's prompt begins with the previous one's.
	msgs     []llm.Message
	nextID   int    // for calls the provider sent without an ID
	decision string // PathGeneral, PathNeedTool, PathBuild, or "" for tools
	text     string // the classifier's text reply: the direct answer

	pending []toolCall // tool calls execute runs next
	said    string     // text the model sent with them
	rounds  int        // rounds of tool calls so far
	runs    []run      // every tool call, in order
	round   []run      // the calls of the last round

	build    BuildRequest
	built    *BuildResult
	buildErr string

	response string
	needTool bool
	// answer is the round's outputs when the model marked every call as
	// the answer (directAnswer); directed says the direct node gave it.
	answer   string
	directed bool
	began    time.Time // when the message began, for the trace's times
	err      error     // returned by Chat with the Result (ErrForbidden)

	// detail, when a node sets it, replaces the node's one trace step
	// (execute: a step per tool call); note is the step's detail text.
	detail []Step
	note   string
}

// toolCall is a function call of the model's and the tool it names.
type toolCall struct {
	llm.FunctionCall
	tool string
}

// run is one tool call.
type run struct {
	tool   string
	args   json.RawMessage
	output string
	err    error
	valid  bool     // the arguments passed the schema (perhaps after a retry)
	ran    bool     // the tool was called with valid arguments
	nested []string // the tools it called (toolkit.Call), in the order they began
	// argsErr is why the tool refused the arguments; it did not run.
	argsErr *toolbox.ArgsError
	// direct says the model marked the call's output as the answer
	// (DirectFlag); text says the output is text, fit to show as it is.
	direct bool
	text   bool
}

// shortlist returns the tools the classifier starts with, and whether they
// are every serving tool (then there is nothing left to discover).
func (a *Agent) shortlist(ctx context.Context, query string) ([]toolbox.Tool, bool) {
	if a.cfg.Passive || a.finder == nil {
		return a.tools.Serving(), true
	}
	// A small catalog is shown whole: a lexical router misses paraphrases
	// ("how warm is it outside"), and a dozen functions cost less than a
	// discovery round trip. A large one is shown only what the router
	// found; the model asks for more when that is not enough. Padding a
	// large catalog's shortlist would add arbitrary tools and, per
	// request, copy every one of them.
	if a.tools.Len() <= smallCatalog*a.cfg.Shortlist {
		return a.routedFirst(ctx, query), true
	}
	return a.lookup(a.finder.Find(ctx, query, a.cfg.Shortlist), nil), false
}

// smallCatalog is how many shortlists' worth of tools a catalog may hold
// and still be shown whole.
const smallCatalog = 2

// routedFirst returns every serving tool, the router's picks first.
func (a *Agent) routedFirst(ctx context.Context, query string) []toolbox.Tool {
	list := a.lookup(a.finder.Find(ctx, query, a.cfg.Shortlist), nil)
	for _, t := range a.tools.Serving() {
		if !slices.ContainsFunc(list, func(have toolbox.Tool) bool { return have.Spec().Name == t.Spec().Name }) {
			list = append(list, t)
		}
	}
	return list
}

// lookup returns the serving tools among names, skipping those in have.
func (a *Agent) lookup(names []string, have []toolbox.Tool) []toolbox.Tool {
	seen := map[string]bool{}
	for _, t := range have {
		seen[t.Spec().Name] = true
	}
	var out []toolbox.Tool
	for _, n := range names {
		if seen[n] {
			continue
		}
		if t, ok := a.tools.Tool(n); ok {
			seen[n] = true
			out = append(out, t)
		}
	}
	return out
}

// classify makes the one model call that decides the message's way: a text
// reply is the direct answer (streamed), calls of the offered tools go to
// execute with their arguments, build_tool to build, need_tool to
// need_tool. A request_tools call adds the tools the router finds and asks
// again, at most MaxDiscovery times; the request and its answer stay in the
// conversation, as a call and its result.
func (a *Agent) classify(ctx context.Context, s *state) (*state, error) {
	candidates, whole := a.shortlist(ctx, s.req.Message)
	s.candidates = candidates
	discoveryLeft := a.cfg.MaxDiscovery
	if whole {
		discoveryLeft = 0
	}
	s.offer(candidates)
	s.msgs = conversation(s.req)
	for {
		resp, err := s.model.Generate(ctx, llm.Request{Messages: s.msgs, Functions: s.offers(), Stream: s.req.Stream})
		if err != nil {
			return s, err
		}
		if len(resp.Calls) == 0 {
			s.decision, s.text = PathGeneral, strings.TrimSpace(resp.Content)
			return s, nil
		}
		resp.Calls = s.identify(resp.Calls)
		var tools []toolCall
		var ask *Discovery
		var askCall llm.FunctionCall
		for _, c := range resp.Calls {
			switch c.Name {
			case fnBuild:
				var b BuildRequest
				if err := json.Unmarshal(args(c.Arguments), &b); err != nil {
					return s, fmt.Errorf("%s reply %.200s: %w", fnBuild, c.Arguments, err)
				}
				b.Text, b.Action = s.req.Message, strings.ToLower(strings.TrimSpace(b.Action))
				s.decision, s.build = PathBuild, b
				s.note = fmt.Sprintf("%s %s", b.Action, b.Tool)
				return s, nil
			case fnRequestTools:
				var d Discovery
				if json.Unmarshal(args(c.Arguments), &d) == nil && ask == nil {
					ask, askCall = &d, c
				}
			case fnNeedTool:
			default:
				// A tool: accept it if it serves, even if the model
				// picked it from memory rather than from the list.
				if name, ok := a.toolOf(s, c.Name); ok {
					tools = append(tools, toolCall{c, name})
				}
			}
		}
		switch {
		case len(tools) > 0:
			s.pending, s.said = tools, resp.Content
			return s, nil
		case ask != nil && discoveryLeft > 0:
			discoveryLeft--
			d := Discovery{Domain: ask.Domain, Operation: ask.Operation, Found: []string{}}
			added := a.lookup(a.finder.Find(ctx, d.Domain+" "+d.Operation, a.cfg.Shortlist), s.candidates)
			for _, t := range added {
				d.Found = append(d.Found, t.Spec().Name)
			}
			s.candidates = append(s.candidates, added...)
			s.offer(added)
			s.discovery = append(s.discovery, d)
			// Only the request for tools is answered: it is the one call
			// the next prompt carries.
			s.msgs = append(s.msgs,
				llm.Message{Role: llm.Assistant, Content: resp.Content, Calls: []llm.FunctionCall{askCall}},
				llm.Message{Role: llm.Tool, CallID: askCall.ID, Name: fnRequestTools, Content: discoveryReply(d, added)})
			continue
		}
		// need_tool, a spent discovery, or only tools that do not exist:
		// no tool fits.
		s.decision = PathNeedTool
		return s, nil
	}
}

// identify gives each call an ID, when the provider sent none, so that its
// result can name it.
func (s *state) identify(calls []llm.FunctionCall) []llm.FunctionCall {
	for i := range calls {
		if calls[i].ID == "" {
			s.nextID++
			calls[i].ID = fmt.Sprintf("call_%d", s.nextID)
		}
	}
	return calls
}

// toolOf returns the serving tool a function call of the model names: the
// tool offered under that function name this message; failing that (the
// model picked it from memory rather than from the list), the tool of that
// name, or the one whose encoded name it is.
func (a *Agent) toolOf(s *state, function string) (string, bool) {
	if name, ok := s.offered[function]; ok {
		if _, serving := a.tools.Tool(name); serving {
			return name, true
		}
		return "", false
	}
	if _, ok := a.tools.Tool(function); ok {
		return function, true
	}
	// Rare (a name not offered this message), so a scan is affordable.
	for _, t := range a.tools.Serving() {
		if name := t.Spec().Name; toolbox.FunctionName(name) == function {
			return name, true
		}
	}
	return "", false
}

// args is a call's arguments, {} when the model sent none.
func args(raw json.RawMessage) json.RawMessage {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// general is the classifier's text reply, already streamed.
func (a *Agent) general(_ context.Context, s *state) (*state, error) {
	s.response = s.text
	return s, nil
}

func (a *Agent) needTool(_ context.Context, s *state) (*state, error) {
	s.needTool = true
	s.response = "I don't have a tool that can do that yet. I can build one: press Create Tool, or say \"make a tool for that\"."
	return s, nil
}

// build runs the build the classifier decided on, if the caller may
// change tools.
func (a *Agent) build(ctx context.Context, s *state) (*state, error) {
	if s.req.Builder == nil {
		s.response = "Building tools is not available here."
		return s, nil
	}
	br, err := s.req.Builder.Build(ctx, s.build, s.req.Progress)
	s.built = br
	if errors.Is(err, ErrForbidden) {
		s.err = err
		s.buildErr = err.Error()
		s.response = "I cannot change tools for you: " + err.Error() + ". Nothing was built or deleted."
		return s, nil
	}
	if err != nil {
		s.buildErr = err.Error()
		s.response = "I could not do that: " + err.Error()
		return s, nil
	}
	s.response = br.Summary
	if !br.OK {
		s.buildErr = br.Error
		s.response = "I could not build that tool: " + br.Error
	}
	return s, nil
}

// execute runs the pending tool calls, in parallel, and adds them and
// their results to the conversation. A call whose arguments are not valid
// JSON or break the tool's schema goes back to the model once, with the
// error, as that call's result; if the new arguments fail too, the tool does
// not run.
func (a *Agent) execute(ctx context.Context, s *state) (*state, error) {
	s.rounds++
	calls := s.pending
	s.pending = nil
	fcs := make([]llm.FunctionCall, len(calls))
	for i, c := range calls {
		fcs[i] = c.FunctionCall
	}
	s.msgs = append(s.msgs, llm.Message{Role: llm.Assistant, Content: s.said, Calls: fcs})
	s.said = ""
	runs := make([]run, len(calls))
	steps := make([]Step, len(calls))
	each := func(f func(i int)) {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(i)
			}()
		}
		wg.Wait()
	}
	began := time.Now()
	each(func(i int) {
		runs[i], steps[i] = a.call(telemetry.WithToolCallID(ctx, calls[i].ID), calls[i].tool, calls[i].FunctionCall.Arguments)
	})
	// Every call is answered before any is asked again: a provider wants
	// all the results of one assistant message before the next one.
	var retry []int
	for i, r := range runs {
		content := r.output
		if r.argsErr != nil {
			content = fmt.Sprintf("Those arguments are invalid: %s. Call %s again with corrected arguments.", r.argsErr.Reason, calls[i].Name)
			retry = append(retry, i)
		} else if r.err != nil {
			content = "Error: " + r.err.Error()
		}
		s.msgs = append(s.msgs, llm.Message{Role: llm.Tool, CallID: calls[i].ID, Name: calls[i].Name, Content: resultText(content)})
	}
	var errs []error
	if len(retry) > 0 {
		errs = a.retry(ctx, s, calls, retry, runs, steps)
	}
	for i := range steps {
		if steps[i].Duration == 0 {
			steps[i].Start, steps[i].Duration = began, time.Since(began)
		}
		steps[i].Ms = traces.Millis(steps[i].Duration)
		// The calls of a round ran at once: the trace shows them side by
		// side, with when each began and ended.
		steps[i].Round = s.rounds
		steps[i].StartMs = traces.Millis(steps[i].Start.Sub(s.began))
		steps[i].EndMs = traces.Millis(steps[i].Start.Add(steps[i].Duration).Sub(s.began))
	}
	s.runs = append(s.runs, runs...)
	s.round = runs
	s.detail = steps
	if len(errs) == 0 {
		s.answer, _ = directAnswer(runs)
	}
	return s, errors.Join(errs...)
}

// retry asks the model again, once, for the arguments of each call in idx,
// with the conversation so far (which holds why they were invalid), and runs
// the tool with the new ones. The new calls and their results join the
// conversation. Its errors are the model's failures, never the tools'.
func (a *Agent) retry(ctx context.Context, s *state, calls []toolCall, idx []int, runs []run, steps []Step) []error {
	errs := make([]error, len(idx))
	fixed := make([]llm.FunctionCall, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			fn := llm.Function{Name: calls[i].Name}
			var offered []llm.Function
			if s.offered[fn.Name] == calls[i].tool {
				offered = s.offers()
			} else {
				fn.Name = toolbox.FunctionName(calls[i].tool) // called by its tool name, perhaps not a valid function name
			}
			if t, ok := a.tools.Tool(calls[i].tool); ok {
				fn.Description, fn.Parameters = t.Spec().Description, t.Spec().Parameters
			}
			m := llm.NewMeter(s.model)
			raw, err := llm.Structured(ctx, m, s.msgs, fn, offered...)
			r := &runs[i]
			step := &steps[i]
			step.LLMCalls, step.PromptTokens, step.CompletionTokens = countsOf(m)
			step.Detail = "arguments retried: " + r.argsErr.Reason
			if _, failed := llm.AsError(err); failed || errors.Is(err, llm.ErrNoModel) || ctx.Err() != nil {
				errs[j] = fmt.Errorf("arguments for %s: %w", calls[i].tool, err)
				return
			}
			if err != nil {
				// The model answered, but not with arguments: as good as
				// invalid ones.
				raw = r.args
			}
			fixed[j] = llm.FunctionCall{ID: calls[i].ID + "_retry", Name: calls[i].Name, Arguments: raw}
			again, st := a.call(telemetry.WithToolCallID(ctx, fixed[j].ID), calls[i].tool, raw)
			if again.argsErr != nil {
				again.err = fmt.Errorf("could not get valid arguments for %s: %w", calls[i].tool, again.err)
				again.ran = false
				st.Error, st.Failure = again.err.Error(), adaptbot.FailureOf(again.err)
				st.ErrorKind = st.Failure
			} else {
				again.valid = true
			}
			st.LLMCalls, st.PromptTokens, st.CompletionTokens, st.Detail = step.LLMCalls, step.PromptTokens, step.CompletionTokens, step.Detail
			st.Start, st.Duration = step.Start, step.Duration+time.Since(began)
			*r, *step = again, st
		}()
	}
	wg.Wait()
	var made []llm.FunctionCall
	var results []llm.Message
	for j, i := range idx {
		if fixed[j].Name == "" {
			continue
		}
		made = append(made, fixed[j])
		content := runs[i].output
		if runs[i].err != nil {
			content = "Error: " + runs[i].err.Error()
		}
		results = append(results, llm.Message{Role: llm.Tool, CallID: fixed[j].ID, Name: fixed[j].Name, Content: resultText(content)})
	}
	if len(made) > 0 {
		s.msgs = append(s.msgs, llm.Message{Role: llm.Assistant, Calls: made})
		s.msgs = append(s.msgs, results...)
	}
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// call runs one tool with raw arguments. Arguments the tool refuses come
// back in argsErr (the tool did not run); any other failure is the tool's.
func (a *Agent) call(ctx context.Context, name string, raw json.RawMessage) (r run, step Step) {
	began := time.Now()
	r = run{tool: name, args: args(raw)}
	step = Step{Node: NodeExecute, Tool: name, Arguments: jsonOrString(r.args)}
	// The calls the tool makes of other tools go under its step.
	ctx, log := toolbox.WithCallLog(ctx)
	step.Start = began
	defer func() {
		step.Duration = time.Since(began)
		step.Calls = log.Nested()
		for _, c := range step.Calls {
			r.nested = append(r.nested, c.Tool)
		}
	}()
	// Look the tool up again: it may have changed since the classifier ran.
	t, ok := a.tools.Tool(name)
	if !ok {
		r.err = fmt.Errorf("tool %s is no longer available", name)
		step.Error = r.err.Error()
		return r, step
	}
	spec := t.Spec()
	step.Version = spec.Version
	if flagged(spec) {
		r.args, r.direct = stripFlag(r.args)
		step.Arguments, step.Direct = jsonOrString(r.args), r.direct
	}
	defer func() {
		if step.Error != "" {
			step.Failure = adaptbot.FailureOf(r.err)
			step.ErrorKind = step.Failure
		}
	}()
	r.output, r.err = t.Call(ctx, r.args)
	if ae, ok := errors.AsType[*toolbox.ArgsError](r.err); ok {
		r.argsErr = ae
		return r, step
	}
	r.valid, r.ran = true, true
	r.text = r.err == nil && !structured(spec, r.output)
	step.Output = clip.String(r.output, traces.MaxOutput)
	if r.err != nil {
		step.Error = r.err.Error()
		a.cfg.Log.Warn("tool failed", "request_id", reqid.From(ctx), "tool", name, "err", r.err)
	}
	return r, step
}

func countsOf(m *llm.Meter) (calls, prompt, completion int) {
	calls, u := m.Counts()
	return calls, u.PromptTokens, u.CompletionTokens
}

// jsonOrString keeps valid JSON as it is and quotes anything else, so a
// trace step always encodes.
func jsonOrString(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// synthesize answers from the tools' results, which the conversation now
// holds, with the same system prompt and functions as every call before:
// the model answers (streamed) or calls more tools, which go back to
// execute, until MaxSteps rounds have run; after that it is asked for text.
// When every call of the round failed, the failure is reported in plain
// words, without asking the model to dress it up. When only some failed
// (calls of one round run at once, and one failing cancels none of the
// others), the model answers from what worked, and sees what failed.
func (a *Agent) synthesize(ctx context.Context, s *state) (*state, error) {
	var failed error
	for _, r := range s.round {
		if r.err == nil {
			failed = nil
			break
		}
		if failed == nil {
			failed = r.err
		}
	}
	if failed != nil {
		s.response = fmt.Sprintf("Sorry, that did not work: %v", failed)
		return s, nil
	}
	more := s.rounds < a.cfg.MaxSteps
	resp, err := s.model.Generate(ctx, llm.Request{Messages: s.msgs, Functions: s.offers(), NoCalls: !more, Stream: s.req.Stream})
	if err != nil {
		return s, err
	}
	for _, c := range s.identify(resp.Calls) {
		if !more {
			break
		}
		if name, ok := a.toolOf(s, c.Name); ok {
			s.pending = append(s.pending, toolCall{c, name})
		}
	}
	if len(s.pending) > 0 {
		s.said = resp.Content
		s.note = fmt.Sprintf("%d more tool call(s)", len(s.pending))
		return s, nil
	}
	s.response = strings.TrimSpace(resp.Content)
	return s, nil
}
