package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// intent sorts a message into CHAT or BUILD.
func (a *Agent) intent(ctx context.Context, m llm.Model, req Request) (string, error) {
	raw, err := llm.Structured(ctx, m, conversation(intentSystem, req), intentFunction)
	if err != nil {
		return "", err
	}
	var out struct {
		Intent string `json:"intent"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("intent reply %s: %w", raw, err)
	}
	if strings.EqualFold(out.Intent, IntentBuild) {
		return IntentBuild, nil
	}
	return IntentChat, nil
}

// shortlist returns the tools the classifier starts with, and whether they
// are every serving tool (then there is nothing left to discover).
func (a *Agent) shortlist(ctx context.Context, query string) ([]registry.Tool, bool) {
	if a.cfg.Passive || a.finder == nil {
		return a.tools.Serving(), true
	}
	// A small catalog is shown whole: a lexical router misses paraphrases
	// ("how warm is it outside"), and a dozen one-line descriptions cost
	// less than a discovery round trip. A large one is shown only what the
	// router found; the model asks for more when that is not enough.
	// Padding a large catalog's shortlist would add arbitrary tools and,
	// per request, copy every one of them.
	if a.tools.Len() <= smallCatalog*a.cfg.Shortlist {
		return a.routedFirst(ctx, query), true
	}
	return a.lookup(a.finder.Find(ctx, query, a.cfg.Shortlist), nil), false
}

// smallCatalog is how many shortlists' worth of tools a catalog may hold
// and still be shown whole.
const smallCatalog = 2

// routedFirst returns every serving tool, the router's picks first.
func (a *Agent) routedFirst(ctx context.Context, query string) []registry.Tool {
	list := a.lookup(a.finder.Find(ctx, query, a.cfg.Shortlist), nil)
	for _, t := range a.tools.Serving() {
		if !slices.ContainsFunc(list, func(have registry.Tool) bool { return have.Name == t.Name }) {
			list = append(list, t)
		}
	}
	return list
}

// lookup returns the serving tools among names, skipping those in have.
func (a *Agent) lookup(names []string, have []registry.Tool) []registry.Tool {
	seen := map[string]bool{}
	for _, t := range have {
		seen[t.Name] = true
	}
	var out []registry.Tool
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

func (a *Agent) classify(ctx context.Context, s *state) (*state, error) {
	candidates, whole := a.shortlist(ctx, s.req.Message)
	s.candidates = candidates
	discoveryLeft := a.cfg.MaxDiscovery
	if whole {
		discoveryLeft = 0
	}
	var extra []llm.Message
	for {
		msgs := conversation(classifierSystem(s.candidates, discoveryLeft), s.req)
		msgs = append(msgs, extra...)
		raw, err := llm.Structured(ctx, s.model, msgs, classifierFunction(s.candidates, discoveryLeft > 0))
		if err != nil {
			return s, err
		}
		var out struct {
			Decision    string `json:"decision"`
			ToolRequest *struct {
				Domain    string `json:"domain"`
				Operation string `json:"operation"`
			} `json:"tool_request"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return s, fmt.Errorf("classifier reply %s: %w", raw, err)
		}
		decision := strings.TrimSpace(out.Decision)
		if decision == "request_tools" && discoveryLeft > 0 && out.ToolRequest != nil {
			discoveryLeft--
			d := Discovery{Domain: out.ToolRequest.Domain, Operation: out.ToolRequest.Operation, Found: []string{}}
			added := a.lookup(a.finder.Find(ctx, d.Domain+" "+d.Operation, a.cfg.Shortlist), s.candidates)
			for _, t := range added {
				d.Found = append(d.Found, t.Name)
			}
			s.candidates = append(s.candidates, added...)
			s.discovery = append(s.discovery, d)
			extra = append(extra,
				llm.Message{Role: llm.Assistant, Content: string(raw)},
				llm.Message{Role: llm.User, Content: discoveryReply(d, added)})
			continue
		}
		switch decision {
		case PathGeneral, PathNeedTool:
			s.decision = decision
			return s, nil
		}
		// A tool: accept it if it serves, even if the model picked it from
		// memory rather than from the list; otherwise no tool fits.
		if t, ok := a.tools.Tool(decision); ok {
			s.decision, s.tool = decision, t
			return s, nil
		}
		s.decision = PathNeedTool
		return s, nil
	}
}

func (a *Agent) general(ctx context.Context, s *state) (*state, error) {
	reply, err := llm.Text(ctx, s.model, conversation("You are AdaptBot, a helpful and concise assistant.", s.req))
	if err != nil {
		return s, err
	}
	s.response = reply
	return s, nil
}

func (a *Agent) needTool(_ context.Context, s *state) (*state, error) {
	s.needTool = true
	s.response = "I don't have a tool that can do that yet. I can build one: press Create Tool, or say \"make a tool for that\"."
	return s, nil
}

// execute extracts the tool's arguments, validates them against its schema
// (asking once more with the validation error), and runs it in the sandbox.
func (a *Agent) execute(ctx context.Context, s *state) (*state, error) {
	// Look the tool up again: it may have changed since the classifier ran.
	t, ok := a.tools.Tool(s.tool.Name)
	if !ok {
		s.extraction = boolPtr(false)
		s.toolErr = fmt.Errorf("tool %s is no longer available", s.tool.Name)
		return s, nil
	}
	s.tool = t
	// Providers accept only [a-zA-Z0-9_-] in function names: an external
	// tool's "server/tool" is sent as "server__tool".
	fn := llm.Function{Name: strings.ReplaceAll(t.Name, "/", "__"), Description: t.Description, Parameters: t.Parameters}
	msgs := conversation(extractSystem(t), s.req)
	var verr error
	for attempt := 0; attempt < 2; attempt++ {
		raw, err := llm.Structured(ctx, s.model, msgs, fn)
		if err != nil {
			return s, fmt.Errorf("extract arguments for %s: %w", t.Name, err)
		}
		s.args = raw
		if verr = contract.Validate(t.Parameters, raw); verr == nil {
			break
		}
		msgs = append(msgs,
			llm.Message{Role: llm.Assistant, Content: string(raw)},
			llm.Message{Role: llm.User, Content: fmt.Sprintf("Those arguments are invalid: %v. Call %s again with corrected arguments.", verr, fn.Name)})
	}
	if verr != nil {
		s.extraction = boolPtr(false)
		s.toolErr = fmt.Errorf("could not get valid arguments for %s: %w", t.Name, verr)
		return s, nil
	}
	s.extraction = boolPtr(true)
	var err error
	switch {
	case t.Code != nil:
		var res sandbox.Result
		res, err = a.runner.Run(ctx, sandbox.Call{Tool: t.Name, Source: t.Code, Input: s.args, Timeout: t.Timeout()})
		s.output = res.Output
	case a.remote != nil:
		s.output, err = a.remote.CallTool(ctx, t.Name, s.args)
	default:
		err = fmt.Errorf("tool %s has no code to run and no MCP server to call", t.Name)
	}
	s.execution = boolPtr(err == nil)
	s.toolErr = err
	return s, nil
}

// synthesize turns the tool's output into a reply. A failed tool is reported
// as a failure, in plain words, without asking the model to dress it up.
func (a *Agent) synthesize(ctx context.Context, s *state) (*state, error) {
	if s.toolErr != nil {
		s.response = fmt.Sprintf("Sorry, that did not work: %v", s.toolErr)
		return s, nil
	}
	reply, err := llm.Text(ctx, s.model, []llm.Message{
		{Role: llm.System, Content: synthSystem()},
		{Role: llm.User, Content: synthUser(s.req.Message, s.tool.Name, s.output)},
	})
	if err != nil {
		return s, err
	}
	s.response = reply
	return s, nil
}
