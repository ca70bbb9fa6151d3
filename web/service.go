package web

import (
	"context"
	"encoding/json"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/llm/provider"
	"adaptbot/registry"
	"adaptbot/service"
	"adaptbot/shipping"
	"adaptbot/traces"
)

// Service is everything the edge asks of AdaptBot: each method is one
// operation that checks the caller's identity (from ctx), writes its row
// and trace, and returns an *adaptbot.Error the edge turns into a status.
// *service.Service is the one implementation; the edge's tests use a fake.
// The edge holds nothing else: no registry, no files, no runner.
type Service interface {
	// Conversations.
	Chat(ctx context.Context, req agent.Request) (*service.ChatResult, error)
	Converse(ctx context.Context, c service.Conversation) (*service.ChatResult, error)
	Feedback(ctx context.Context, id string, fb service.FeedbackRequest) (*service.FeedbackResult, error)
	Requests(ctx context.Context, limit int) ([]traces.Record, error)
	Request(ctx context.Context, id string) (traces.Record, error)

	// Tools: reading, running, building and changing them.
	Tools(ctx context.Context) ([]service.ToolInfo, error)
	Tool(ctx context.Context, name string) (*service.ToolInfo, error)
	ToolUsage(ctx context.Context) (map[string]service.ToolUse, error)
	Versions(ctx context.Context, name string) ([]registry.Version, error)
	Diff(ctx context.Context, name string, from, to int) (*service.Diff, error)
	RemoteTools(ctx context.Context) (servers []string, tools []service.RemoteTool, err error)
	Run(ctx context.Context, name string, args json.RawMessage) (*service.RunResult, error)
	Test(ctx context.Context, name string) (*generator.ExampleReport, error)
	CanBuild(ctx context.Context, req generator.Request) error
	Build(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error)
	Plan(ctx context.Context, request string) (*generator.Plan, error)
	Import(ctx context.Context, req service.ImportRequest) ([]shipping.Imported, error)
	Approve(ctx context.Context, name string) (registry.Entry, error)
	Rollback(ctx context.Context, name string, version int) (*generator.Result, error)
	Delete(ctx context.Context, name string, force bool) (*generator.Result, error)

	// Learning from use: failure cases, repairs and skills.
	Failures(ctx context.Context, name string) (*service.FailureReport, error)
	FailureSummary(ctx context.Context) (map[string]service.FailureCount, error)
	ConfirmCase(ctx context.Context, name, id string) (*service.FailureReport, error)
	DismissCase(ctx context.Context, name, id string) (*service.FailureReport, error)
	CanRepair(ctx context.Context, name string, req service.RepairRequest) error
	Repair(ctx context.Context, name string, req service.RepairRequest, progress func(generator.Event)) (*generator.Result, error)
	Skills(ctx context.Context) ([]service.Skill, error)

	// The people the server knows (admin only).
	ListUsers(ctx context.Context) ([]users.Info, error)
	AddUser(ctx context.Context, name string, role identity.Role) (users.Info, string, error)
	RemoveUser(ctx context.Context, name string) (users.Info, error)
	RotateKey(ctx context.Context, name string) (users.Info, string, error)
	SetRole(ctx context.Context, name string, role identity.Role) (users.Info, error)
	UserSessions(ctx context.Context, name string) ([]users.Session, error)
	EndSessions(ctx context.Context, name, id string) (int, error)

	// The server's state and numbers.
	Health(ctx context.Context) service.Health
	ModelName() string
	ModelStatus() (provider.Status, bool)
	Benchmarks(ctx context.Context, f benchmarks.Filter) (benchmarks.Summary, error)

	// Refuse writes the row of a request the edge refused before any
	// operation ran (a body too large, a rate limit, a bad body).
	Refuse(ctx context.Context, r service.Refused) *adaptbot.Error
}

var _ Service = (*service.Service)(nil)
