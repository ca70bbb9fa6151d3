package service

import (
	"context"

	"adaptbot/cluster"
	"adaptbot/identity"
	"adaptbot/llm/provider"
	mcpclient "adaptbot/mcp/client"
	"adaptbot/sandbox"
)

// Sandbox is the runner as the service asks it, for its state.
type Sandbox interface {
	Stats() sandbox.Stats
}

// Remote is the hub of external MCP servers; *mcpclient.Hub is one.
type Remote interface {
	Servers() []string
	Tools() []mcpclient.Tool
}

// Health is the server's state at a glance: what GET /health reports
// besides the model's reachability, and what the pages show of it.
type Health struct {
	// Tools counts the registry's local tools.
	Tools int
	// Model is the chat model's "provider/name", "" without one.
	Model string
	// Sandbox is the worker pool's state; Degraded when it is replacing
	// workers (calls still queue and run).
	Sandbox  sandbox.Stats
	Degraded bool
	// Servers and RemoteTools count the external MCP servers and their
	// tools; HasRemote says a hub is configured at all.
	HasRemote            bool
	Servers, RemoteTools int
	// Warnings are the registry's (a tool that does not load, say).
	Warnings []string
	// Cluster is the link to NATS, nil on files alone.
	Cluster *cluster.Status
}

// Health reports the server's state. It needs no permission: it holds no
// one's words, and a load balancer asks it.
func (s *Service) Health(ctx context.Context) Health {
	var h Health
	if s.d.Registry != nil {
		h.Tools = s.d.Registry.Len()
		h.Warnings = s.d.Registry.Warnings()
	}
	h.Model = s.ModelName()
	if s.d.Sandbox != nil {
		h.Sandbox = s.d.Sandbox.Stats()
		h.Degraded = h.Sandbox.Live+h.Sandbox.Starting < h.Sandbox.Size
	}
	if s.d.Remote != nil {
		h.HasRemote = true
		h.Servers, h.RemoteTools = len(s.d.Remote.Servers()), len(s.d.Remote.Tools())
	}
	if st, ok := s.d.Cluster.(interface{ Status() *cluster.Status }); ok {
		h.Cluster = st.Status()
	}
	return h
}

// ModelName is the chat model's "provider/name", "" without one: the
// pages show it.
func (s *Service) ModelName() string {
	if m := s.model(); m != nil {
		return m.Name()
	}
	return ""
}

// RemoteTool is one tool of an external MCP server, as the hub last listed
// it: its description (adaptbot.Tool, Name its name on its server), its
// server and its title.
type RemoteTool = mcpclient.Tool

// RemoteTools lists the external MCP servers and their tools.
func (s *Service) RemoteTools(ctx context.Context) (servers []string, tools []RemoteTool, err error) {
	_, o, err := s.read(ctx, "list remote tools", identity.ReadTools)
	if err != nil || s.d.Remote == nil {
		return nil, nil, o.finish(err)
	}
	return s.d.Remote.Servers(), s.d.Remote.Tools(), o.finish(nil)
}

// ModelCheck watches the chat model's reachability; *provider.Check is one.
type ModelCheck interface {
	Status() provider.Status
}

// ModelStatus is the last check of the chat model; ok is false when no
// check runs here (a service built without one).
func (s *Service) ModelStatus() (st provider.Status, ok bool) {
	if s.d.Model == nil {
		return provider.Status{}, false
	}
	return s.d.Model.Status(), true
}
