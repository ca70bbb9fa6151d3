// Package identity says who is asking: a person, or the one local user of a
// server on loopback, with a role. The edge works it out (a key, a session,
// a trusted header, or loopback) and carries it in the context down to the
// service layer, which asks Identity.Can before doing anything. That method
// is the one permission rule; nothing else decides who may do what.
//
// It is a leaf package: of AdaptBot it imports only the root, whose Role
// and Error it speaks.
package identity

import (
	"context"
	"fmt"
	"strings"

	"adaptbot"
)

// Role is what a person may do (adaptbot.Role). Each role may do
// everything the one before it may.
type Role = adaptbot.Role

// The roles, from least to most.
const (
	// User chats (and so runs tools from chat), reads the tools, and reads
	// their own requests, traces and feedback.
	User Role = "user"
	// Builder also builds, modifies, tests and runs tools directly.
	Builder Role = "builder"
	// Admin also deletes, rolls back and approves tools, manages users, and
	// reads everyone's requests, the dashboard, reports and exports.
	Admin Role = "admin"
)

// Roles lists every role, least first.
var Roles = []Role{User, Builder, Admin}

// ParseRole reads a role's name, case-insensitively.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	switch r {
	case User, Builder, Admin:
		return r, nil
	}
	return "", fmt.Errorf("no role named %q: the roles are user, builder and admin", s)
}

// rank orders roles; an unknown or empty role ranks below every other.
func rank(r Role) int {
	switch r {
	case User:
		return 1
	case Builder:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Action is something a request asks to do. Each needs a least role.
type Action string

// The actions, each with the least role that may take it (see Need).
const (
	Chat      Action = "chat"       // user: chat, and run tools from chat
	ReadTools Action = "read_tools" // user: list and read tools, their versions and failures
	ReadOwn   Action = "read_own"   // user: one's own requests, traces and feedback
	RunTool   Action = "run_tool"   // builder: run a tool directly (API, CLI, MCP tools/call)
	Build     Action = "build"      // builder: build, modify, test, plan, repair, import
	Delete    Action = "delete"     // admin: delete, roll back, approve
	Manage    Action = "manage"     // admin: manage users
	ReadAll   Action = "read_all"   // admin: everyone's requests, the dashboard, reports, exports
	// ShareSecret: admin: set or delete a secret shared by everyone (a
	// person's own secrets need only Chat).
	ShareSecret Action = "share_secret"
	// TrustTool: admin: let a tool version's requests to a host go without
	// asking anyone.
	TrustTool Action = "trust_tool"
	// AnswerAny: admin: answer an approval someone else was asked.
	AnswerAny Action = "answer_any"
)

// Need returns the least role that may take a.
func Need(a Action) Role {
	switch a {
	case Chat, ReadTools, ReadOwn:
		return User
	case RunTool, Build:
		return Builder
	}
	return Admin
}

// Methods say how an identity was established.
const (
	// Loopback is the one local user of a server that listens on loopback
	// with no identities configured: an admin, with no login.
	Loopback = "loopback"
	// Token is the admin token, ADAPTBOT_ADMIN_TOKEN.
	Token = "token"
	// Key is a person's API key.
	Key = "key"
	// Session is a browser session, signed in with OIDC or with a key
	// typed into the sign-in page.
	Session = "session"
	// Header is a trusted proxy's header.
	Header = "header"
	// Internal is the server itself: start-up work, automatic repairs.
	Internal = "internal"
)

// Identity is who is asking. The zero value is nobody: it may do nothing.
type Identity struct {
	// Name is the person's name: a user's name, an e-mail address from a
	// sign-in or a proxy's header; "local" for the loopback user.
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Pseudonym is a stable keyed hash of a stored user's ID (fixed when
	// the user was created), or of Name for someone the store does not
	// hold: the owner of their requests, and the only form of them that
	// reaches the benchmarks CSV.
	Pseudonym string `json:"pseudonym,omitempty"`
	// Method is how the identity was established (Loopback, Token, ...).
	Method string `json:"method"`
}

// Local is the one user of a server on loopback with nothing configured.
var Local = Identity{Name: "local", Role: Admin, Method: Loopback}

// System is the server acting on its own (automatic repairs, start-up).
var System = Identity{Name: "adaptbot", Role: Admin, Method: Internal}

// Known reports whether id is somebody: the zero Identity is not.
func (id Identity) Known() bool { return rank(id.Role) > 0 }

// Can reports whether id may take a: this is the one permission rule.
func (id Identity) Can(a Action) bool { return rank(id.Role) >= rank(Need(a)) }

// Owns reports whether id may read a request made by owner (a
// Pseudonym, or "" for a request made before identities existed): its
// author may, and so may whoever may read everything.
func (id Identity) Owns(owner string) bool {
	if id.Can(ReadAll) {
		return true
	}
	return id.Known() && owner != "" && owner == id.Pseudonym
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the identity ctx carries, or the zero Identity (nobody).
func From(ctx context.Context) Identity {
	id, _ := ctx.Value(key{}).(Identity)
	return id
}
