package adaptbot

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// The contract of tools that act on people's systems (docs/acting.md):
// the secrets their requests carry, the approval a person gives before a
// request changes anything, and an admin's trust of a tool version's
// requests to a host. Package secrets keeps the secrets and the trusts,
// package approval the approvals waiting for an answer; the service
// checks who may do what (identity.Can) and writes the row of each change
// and each decision.

// SecretScope says whose a secret is.
type SecretScope string

// The scopes of a secret.
const (
	// SecretPersonal: one person's, used for their own requests alone.
	SecretPersonal SecretScope = "personal"
	// SecretShared: the team's, set by an admin, used for whoever has no
	// personal secret of that name.
	SecretShared SecretScope = "shared"
)

// Secret is what may be shown of a secret: everything but its value
// (GET /api/secrets).
type Secret struct {
	Name  string      `json:"name"`
	Hosts []string    `json:"hosts"`
	Scope SecretScope `json:"scope"`
	// Owner is the pseudonym of the person whose secret it is, or, for a
	// shared secret, of the admin who set it.
	Owner    string    `json:"owner"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

// SecretRequest is the body of PUT /api/secrets/NAME: the value, the hosts
// it may be sent to, and whether it is the team's (admins only). Its
// String and LogValue never show the value.
type SecretRequest struct {
	Value  string   `json:"value"`
	Hosts  []string `json:"hosts"`
	Shared bool     `json:"shared,omitempty"`
}

// String describes r without its value.
func (r SecretRequest) String() string {
	return fmt.Sprintf("secret for %v (shared %v, value hidden)", r.Hosts, r.Shared)
}

// GoString is String, so that %#v shows no value either.
func (r SecretRequest) GoString() string { return r.String() }

// LogValue is what a log line shows of r: never its value.
func (r SecretRequest) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("hosts", r.Hosts), slog.Bool("shared", r.Shared))
}

// SecretList is the answer of GET /api/secrets: the caller's own secrets,
// then the shared ones.
type SecretList struct {
	Count   int      `json:"count"`
	Secrets []Secret `json:"secrets"`
}

// SecretService keeps the secrets of the person asking (and, for admins,
// the shared ones). Each change is one operation with its row, which
// names the secret and never its value.
type SecretService interface {
	// Secrets lists the caller's secrets and the shared ones.
	Secrets(ctx context.Context) (*SecretList, error)
	// SetSecret keeps req's value as the secret name, the caller's own or,
	// with req.Shared, the team's.
	SetSecret(ctx context.Context, name string, req SecretRequest) (*Secret, error)
	// DeleteSecret removes the caller's secret name or, with shared, the
	// team's.
	DeleteSecret(ctx context.Context, name string, shared bool) (*Secret, error)
}

// Approval is a request of a tool that waits for the approval of the
// person behind it, as they are shown it: the chat stream's approval
// event carries it as it is. Method, URL and Body are as the tool wrote
// them, so a secret is its placeholder ({{secret:NAME}}).
type Approval struct {
	ID      string    `json:"id"`
	Tool    string    `json:"tool"`
	Version int       `json:"version"`
	Method  string    `json:"method"`
	URL     string    `json:"url"`
	Body    string    `json:"body"`
	Expires time.Time `json:"expires"`
}

// Decision is a person's answer to an approval: Allow or Deny.
type Decision string

// The decisions a person may give.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
)

// ApprovalAnswer is a person's answer, the body of POST /api/approvals/ID.
type ApprovalAnswer struct {
	Decision Decision `json:"decision"`
	// ForChat, with Allow, lets the rest of this chat's requests of the
	// same tool version to the same host go without asking.
	ForChat bool `json:"for_chat,omitempty"`
}

// ApprovalOutcome says what became of a request that needed approval.
type ApprovalOutcome string

// The outcomes of an approval.
const (
	ApprovalAllowed        ApprovalOutcome = "allowed"
	ApprovalAllowedForChat ApprovalOutcome = "allowed_for_chat"
	ApprovalDenied         ApprovalOutcome = "denied"
	// ApprovalExpired: no answer came in time. Not a denial: nobody said
	// no.
	ApprovalExpired ApprovalOutcome = "expired"
	// ApprovalCancelled: the request was given up before an answer.
	ApprovalCancelled ApprovalOutcome = "cancelled"
	// ApprovalRemembered: allowed earlier in the chat for the rest of it;
	// nobody was asked.
	ApprovalRemembered ApprovalOutcome = "remembered"
	// ApprovalRefused: nobody could be asked, so nothing was sent.
	ApprovalRefused ApprovalOutcome = "refused"
)

// Sends reports whether the request goes.
func (o ApprovalOutcome) Sends() bool {
	return o == ApprovalAllowed || o == ApprovalAllowedForChat || o == ApprovalRemembered
}

// ApprovalRecord is a settled approval: what was asked, what became of
// it, who was asked and who answered, and the request's digest. Each
// decision's row (intent APPROVE) says the same.
type ApprovalRecord struct {
	Approval
	Outcome ApprovalOutcome `json:"outcome"`
	// Asker is the pseudonym of the person asked; By of whoever answered
	// (the person, an admin), empty when nobody did.
	Asker string `json:"asker"`
	By    string `json:"by,omitempty"`
	// Digest identifies the exact request (method, URL, headers, body,
	// tool version): the approval was for it and no other.
	Digest  string    `json:"digest"`
	Decided time.Time `json:"decided"`
	// RequestID is the request ID of the decision's own row; AskedIn that
	// of the chat or run whose tool asked. The service fills them.
	RequestID string `json:"request_id,omitempty"`
	AskedIn   string `json:"asked_in,omitempty"`
}

// ApprovalList is the answer of GET /api/approvals: the approvals waiting
// for the caller's answer (an admin's: everyone's), oldest first.
type ApprovalList struct {
	Count     int        `json:"count"`
	Approvals []Approval `json:"approvals"`
}

// ApprovalService answers approvals: what waits for the person asking, and
// their answer, which is one operation with its row.
type ApprovalService interface {
	// Approvals lists the approvals waiting for the caller's answer.
	Approvals(ctx context.Context) (*ApprovalList, error)
	// AnswerApproval answers approval id. A second answer is a Conflict,
	// one after its expiry Gone, another person's Forbidden (admins
	// excepted).
	AnswerApproval(ctx context.Context, id string, a ApprovalAnswer) (*ApprovalRecord, error)
}

// Asker is how a door asks its person to approve a request: the chat
// stream sends an approval event, a terminal asks y/N, an MCP client
// elicits. Ask returns the person's answer when it gets one itself; a door
// whose answer comes through ApprovalService.AnswerApproval (the chat
// page) presents the approval and waits for ctx to end, which it does once
// the approval is answered, expires, or its request is given up. An error
// while ctx runs says the person cannot be asked this way: the request is
// refused, in that error's words, and nothing is sent.
type Asker interface {
	Ask(ctx context.Context, a Approval) (ApprovalAnswer, error)
}

// AskerFunc is an Asker made of a function.
type AskerFunc func(ctx context.Context, a Approval) (ApprovalAnswer, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, a Approval) (ApprovalAnswer, error) { return f(ctx, a) }

// Hold is the Asker of a door that shows an approval and holds its request
// open until the answer comes another way (POST /api/approvals/ID):
// present, when set, is told of each approval first.
func Hold(present func(Approval)) Asker {
	return AskerFunc(func(ctx context.Context, a Approval) (ApprovalAnswer, error) {
		if present != nil {
			present(a)
		}
		<-ctx.Done()
		return ApprovalAnswer{}, ctx.Err()
	})
}

type askerKey struct{}

// WithAsker returns ctx whose requests' approvals a asks: a door says so
// before it hands its request to an operation. A request whose context
// carries none is refused where an approval is needed, with words that
// say which doors can ask.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// AskerFrom returns the Asker of ctx, or nil.
func AskerFrom(ctx context.Context) Asker {
	a, _ := ctx.Value(askerKey{}).(Asker)
	return a
}

// Trust is an admin's word that one version of a tool may send its
// requests to a host without asking anyone. It names the version's number
// and SHA-256, so the next version is asked about again.
type Trust struct {
	Tool    string `json:"tool"`
	Version int    `json:"version"`
	SHA256  string `json:"sha256"`
	Host    string `json:"host"`
	// By is the pseudonym of the admin who gave it, At when.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// TrustRequest is the body of POST /api/tools/NAME/trust: the host whose
// requests go without asking, and, when set, the version meant (refused
// if another serves by now).
type TrustRequest struct {
	Host    string `json:"host"`
	Version int    `json:"version,omitempty"`
}

// TrustList is a tool's trusts: the answer of a change to them. Those of
// a version that no longer serves are undone, and say so by their
// Version.
type TrustList struct {
	Tool string `json:"tool"`
	// Version is the serving version; Hosts the hosts it declares.
	Version int      `json:"version"`
	Hosts   []string `json:"hosts"`
	Trusts  []Trust  `json:"trusts"`
}

// TrustService is the admins' trust of tools' requests: each change is
// one operation with its row.
type TrustService interface {
	// TrustTool lets the serving version of tool send its requests to
	// req.Host without asking.
	TrustTool(ctx context.Context, tool string, req TrustRequest) (*TrustList, error)
	// UntrustTool takes that back: its requests to host are asked about
	// again.
	UntrustTool(ctx context.Context, tool, host string) (*TrustList, error)
}
