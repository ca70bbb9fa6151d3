package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"adaptbot/llm"
)

// A client that brings its own tools (the OpenAI-compatible door) has them
// offered to the model beside AdaptBot's own. AdaptBot cannot run them: a
// call of one ends the message, and the calls go back to the client
// (Result.Calls), which runs them and continues the chat with their
// results (Request.After). The graph does not change for them: the model
// the nodes call is wrapped (clientModel) so that every call offers the
// client's functions, and a reply calling one of them reaches the nodes as
// a plain text reply, which ends the message.

// clientModel wraps a chat's model: every call offers the client's
// functions after the agent's own, and the calls that produce the answer
// (those that force no function) take the client's sampling settings and
// hand calls of client functions to calls instead of the graph.
type clientModel struct {
	llm.Model
	req Request
	// names maps the name each client function is offered under to the
	// client's name for it: a name that AdaptBot uses itself is offered
	// with a suffix, and the call goes back under the client's name.
	names map[string]string
	fns   []llm.Function

	mu    sync.Mutex
	calls []llm.FunctionCall
	next  int
}

// newClientModel returns m wrapped for req, or m itself when req brings
// no tools and no settings.
func (a *Agent) newClientModel(m llm.Model, req Request) llm.Model {
	if len(req.Client) == 0 && req.MaxTokens == 0 && req.Temperature == nil {
		return m
	}
	c := &clientModel{Model: m, req: req, names: map[string]string{}}
	for _, f := range req.Client {
		name := f.Name
		for i := 2; a.nameTaken(name) || c.names[name] != ""; i++ {
			name = fmt.Sprintf("%s_%d", f.Name, i)
		}
		c.names[name] = f.Name
		f.Name = name
		c.fns = append(c.fns, f)
	}
	return c
}

// nameTaken reports whether a function name is AdaptBot's own: one of the
// classifier's functions or a serving tool's.
func (a *Agent) nameTaken(name string) bool {
	switch name {
	case fnRequestTools, fnBuild, fnNeedTool:
		return true
	}
	_, ok := a.tools.Tool(name)
	return ok
}

// offered is the name a client function is offered under.
func (c *clientModel) offered(client string) string {
	for o, n := range c.names {
		if n == client && o != client {
			return o
		}
	}
	return client
}

// Generate offers the client's functions with the agent's own; a reply
// that calls any of them comes back as text alone, its calls kept for the
// client (calls of AdaptBot's tools in the same reply are dropped: the
// model asks for them again once the client's results are in).
func (c *clientModel) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	if len(c.fns) > 0 {
		r.Functions = append(append([]llm.Function(nil), r.Functions...), c.fns...)
		r.Messages = c.rename(r.Messages)
	}
	answer := r.Force == ""
	if answer {
		if c.req.MaxTokens > 0 {
			r.MaxTokens = c.req.MaxTokens
		}
		r.Temperature = c.req.Temperature
	}
	resp, err := c.Model.Generate(ctx, r)
	if err != nil || !answer || len(c.fns) == 0 {
		return resp, err
	}
	var mine []llm.FunctionCall
	for _, call := range resp.Calls {
		if name, ok := c.names[call.Name]; ok {
			call.Name = name
			mine = append(mine, call)
		}
	}
	if len(mine) == 0 {
		return resp, nil
	}
	c.mu.Lock()
	for i := range mine {
		if mine[i].ID == "" {
			c.next++
			mine[i].ID = fmt.Sprintf("call_client_%d", c.next)
		}
	}
	c.calls = append(c.calls, mine...)
	c.mu.Unlock()
	resp.Calls = nil
	return resp, nil
}

// rename gives the client's earlier calls in the conversation (After) the
// names their functions are offered under this message.
func (c *clientModel) rename(msgs []llm.Message) []llm.Message {
	renamed := false
	for _, n := range c.names {
		if c.offered(n) != n {
			renamed = true
		}
	}
	if !renamed || len(c.req.After) == 0 {
		return msgs
	}
	out := append([]llm.Message(nil), msgs...)
	for i, m := range out {
		if len(m.Calls) > 0 {
			calls := append([]llm.FunctionCall(nil), m.Calls...)
			for j := range calls {
				if c.isClientCall(calls[j].ID) {
					calls[j].Name = c.offered(calls[j].Name)
				}
			}
			out[i].Calls = calls
		}
		if m.Role == llm.Tool && c.isClientCall(m.CallID) {
			out[i].Name = c.offered(m.Name)
		}
	}
	return out
}

// isClientCall reports whether id is one of the client's calls in After.
func (c *clientModel) isClientCall(id string) bool {
	for _, m := range c.req.After {
		for _, call := range m.Calls {
			if call.ID == id {
				return true
			}
		}
	}
	return false
}

// clientCalls returns the calls of client functions the model made.
func clientCalls(m llm.Model) []llm.FunctionCall {
	c, ok := m.(*clientModel)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// PathClientTools is the path of a message that ended in calls of the
// client's tools.
const PathClientTools = "client_tools"

// afterMessages are the messages after the user's: the client's calls and
// their results, as they go to the model.
func afterMessages(req Request) []llm.Message {
	out := make([]llm.Message, 0, len(req.After))
	for _, m := range req.After {
		if m.Role == llm.Tool || len(m.Calls) > 0 {
			out = append(out, llm.Message{Role: m.Role, Content: strings.TrimSpace(m.Content), Calls: m.Calls, CallID: m.CallID, Name: m.Name})
		}
	}
	return out
}
