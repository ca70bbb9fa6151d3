package adaptbot

import (
	"context"
	"time"
)

// The contract of the people a server knows: users with a role and a key,
// and their browser sign-ins. Package identity names the roles and holds
// the one permission rule; package identity/users keeps the people.

// Role is what a person may do: user, builder or admin (package identity).
type Role string

// User is what may be shown of a person the server knows: everything but
// their key's hash.
type User struct {
	// ID is fixed when the user is created; the pseudonym comes from it.
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Pseudonym string    `json:"pseudonym"`
	Created   time.Time `json:"created"`
	Rotated   time.Time `json:"rotated,omitzero"`
}

// Session is one browser sign-in of a user.
type Session struct {
	// ID names the session; with the server's secret it makes the cookie.
	ID string `json:"id"`
	// Method is how the browser signed in: "key" or "oidc".
	Method string `json:"method"`
	// Role is what the provider's roles claim gave at an OIDC sign-in, ""
	// if nothing; a stored user always gets their stored role.
	Role    Role      `json:"role,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// UserRequest is the body of POST /api/users (a name and a role) and of
// PATCH /api/users/NAME (a role).
type UserRequest struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// UserResult is the answer of a change to a user: the user, their new key
// when one was made (shown this once), a note, and whether they were
// removed.
type UserResult struct {
	Key     string `json:"key,omitempty"`
	Note    string `json:"note,omitempty"`
	Removed bool   `json:"removed,omitempty"`
	User    User   `json:"user"`
}

// UserList is the answer of GET /api/users.
type UserList struct {
	Count int    `json:"count"`
	Users []User `json:"users"`
}

// SessionList is the answer of GET /api/users/NAME/sessions: the browser
// sign-ins of NAME that are on (never their cookies).
type SessionList struct {
	Count    int       `json:"count"`
	Name     string    `json:"name"`
	Sessions []Session `json:"sessions"`
}

// SessionsEnded is the answer of DELETE /api/users/NAME/sessions[/ID].
type SessionsEnded struct {
	Ended int    `json:"ended"`
	Name  string `json:"name"`
}

// UserService is the people a server knows, for admins: each change is
// one operation with its row, naming the user by pseudonym.
type UserService interface {
	// Users lists every user.
	Users(ctx context.Context) (*UserList, error)
	// AddUser makes a user with a new key, which it returns: the only time
	// the key is seen.
	AddUser(ctx context.Context, req UserRequest) (*UserResult, error)
	// SetRole changes a user's role; it holds from their next request.
	SetRole(ctx context.Context, name string, role Role) (*UserResult, error)
	// RotateKey gives a user a new key; the old one, and every session,
	// stop working at once.
	RotateKey(ctx context.Context, name string) (*UserResult, error)
	// RemoveUser deletes a user: their key and sessions stop working at
	// once.
	RemoveUser(ctx context.Context, name string) (*UserResult, error)
	// Sessions lists the browser sign-ins of name that are on.
	Sessions(ctx context.Context, name string) (*SessionList, error)
	// EndSessions ends the session id of name, or with id "" every one of
	// them.
	EndSessions(ctx context.Context, name, id string) (*SessionsEnded, error)
}
