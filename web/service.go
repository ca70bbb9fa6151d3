package web

import (
	"context"

	"adaptbot"
)

// Service is everything the edge asks of AdaptBot: the root's operations,
// area by area. Each method is one operation that checks the caller's
// identity (from ctx), writes its row and trace, and returns an
// *adaptbot.Error the edge turns into a status. *service.Service is the
// one implementation (app checks it at compile time); the edge's tests use
// a fake. The edge holds nothing else: no registry, no files, no runner.
type Service interface {
	adaptbot.ChatService
	adaptbot.RequestService
	adaptbot.ToolService
	adaptbot.BuildService
	adaptbot.LearningService
	adaptbot.UserService
	adaptbot.StatsService
	adaptbot.SecretService
	adaptbot.ApprovalService
	adaptbot.TrustService
	adaptbot.Refuser

	// RemoteTools lists the external MCP servers and their tools, for the
	// tools page.
	RemoteTools(ctx context.Context) (*adaptbot.RemoteTools, error)
}
