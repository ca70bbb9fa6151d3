package service

import (
	"context"

	"adaptbot"
	"adaptbot/identity"
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

// Health reports the server's state. It needs no permission: it holds no
// one's words, and a load balancer asks it.
func (s *Service) Health(ctx context.Context) adaptbot.Health {
	var h adaptbot.Health
	if s.d.Registry != nil {
		h.Tools = s.d.Registry.Len()
		h.Warnings = s.d.Registry.Warnings()
	}
	h.Model = s.ModelName()
	if s.d.Sandbox != nil {
		h.Sandbox = sandboxStats(s.d.Sandbox.Stats())
		h.Degraded = h.Sandbox.Live+h.Sandbox.Starting < h.Sandbox.Size
	}
	if s.d.Remote != nil {
		h.HasRemote = true
		h.Servers, h.RemoteTools = len(s.d.Remote.Servers()), len(s.d.Remote.Tools())
	}
	if st, ok := s.d.Cluster.(interface {
		Status() *adaptbot.ClusterStatus
	}); ok {
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

// sandboxStats is what /healthz shows of the pool's state. The pool keeps
// its own type: a native worker program's copy of package sandbox has of
// the root only its vocabulary of failures.
func sandboxStats(st sandbox.Stats) adaptbot.SandboxStats {
	return adaptbot.SandboxStats{Mode: string(st.Mode), Size: st.Size, Live: st.Live, Busy: st.Busy, Idle: st.Idle, Starting: st.Starting,
		Restarts: st.Restarts, StartFailures: st.StartFailures, Extra: st.Extra, Confined: st.Confined, Seccomp: st.Seccomp, Confinement: st.Confinement}
}

// RemoteTools lists the external MCP servers and their tools: each tool's
// description, Name its name on its server, Category its server.
func (s *Service) RemoteTools(ctx context.Context) (*adaptbot.RemoteTools, error) {
	_, o, err := s.read(ctx, "list remote tools", identity.ReadTools)
	if err != nil {
		return nil, o.finish(err)
	}
	out := &adaptbot.RemoteTools{}
	if s.d.Remote != nil {
		out.Servers = s.d.Remote.Servers()
		for _, t := range s.d.Remote.Tools() {
			out.Tools = append(out.Tools, t.Tool)
		}
	}
	return out, o.finish(nil)
}

// ModelCheck watches the chat model's reachability; *provider.Check is one.
type ModelCheck interface {
	Status() adaptbot.ModelStatus
}

// ModelStatus is the last check of the chat model; without a check (a
// service built without one) it names no provider, as for a server without
// a model.
func (s *Service) ModelStatus() adaptbot.ModelStatus {
	if s.d.Model == nil {
		return adaptbot.ModelStatus{}
	}
	return s.d.Model.Status()
}
