package service

import (
	"context"
	"errors"
	"strings"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// Users is the user store as the service asks it; *users.Store is one.
type Users interface {
	List() []adaptbot.User
	Lookup(name string) (users.Info, bool)
	Pseudonym(idOrName string) string
	Add(ctx context.Context, name string, role identity.Role) (users.Info, string, error)
	Remove(ctx context.Context, name string) (users.Info, error)
	Rotate(ctx context.Context, name string) (users.Info, string, error)
	SetRole(ctx context.Context, name string, role identity.Role) (users.Info, error)
	Sessions(name string) []users.Session
	EndSessions(ctx context.Context, name, id string) (int, error)
}

// errNoUsers refuses a user operation on a server that keeps no users.
var errNoUsers = &adaptbot.Error{Kind: adaptbot.NotConfigured, Msg: "this server keeps no users"}

// manage starts a change to the users: it needs the Manage permission, and
// writes its row (intent MANAGE, category users_<what>), trace and span.
// The row names the user by pseudonym, never by name.
func (s *Service) manage(ctx context.Context, what, name string) (context.Context, *op, error) {
	ctx, o, err := s.start(ctx, "users "+what, "", identity.Manage)
	o.row.Intent, o.row.Category = adaptbot.IntentManage, adaptbot.CategoryUsersPrefix+what
	o.row.Query = "users " + what
	if err == nil && s.d.Users == nil {
		err = errNoUsers
	}
	if err == nil && name != "" {
		o.row.Query += " " + s.pseudonymOf(name)
	}
	o.rec.Query = o.row.Query
	return ctx, o, err
}

// pseudonymOf is name's pseudonym: the user's, or the one a person of that
// name who is not a user would have.
func (s *Service) pseudonymOf(name string) string {
	if u, ok := s.d.Users.Lookup(name); ok {
		return u.Pseudonym
	}
	return s.d.Users.Pseudonym(strings.ToLower(strings.TrimSpace(name)))
}

// userError gives the store's refusals their kinds.
func userError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, users.ErrInvalid):
		return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: err.Error(), Err: err}
	case errors.Is(err, users.ErrNotFound):
		return &adaptbot.Error{Kind: adaptbot.NotFound, Msg: err.Error(), Err: err}
	case errors.Is(err, users.ErrExists):
		return &adaptbot.Error{Kind: adaptbot.Conflict, Msg: err.Error(), Err: err}
	}
	return err
}

// Users returns every user (admins only).
func (s *Service) Users(ctx context.Context) (*adaptbot.UserList, error) {
	_, o, err := s.read(ctx, "users list", identity.Manage)
	if err == nil && s.d.Users == nil {
		err = errNoUsers
	}
	if err != nil {
		return nil, o.finish(err)
	}
	list := s.d.Users.List()
	return &adaptbot.UserList{Users: list, Count: len(list)}, o.finish(nil)
}

// AddUser makes a user with a new key, which it returns: the only time the
// key is seen.
func (s *Service) AddUser(ctx context.Context, req adaptbot.UserRequest) (*adaptbot.UserResult, error) {
	ctx, o, err := s.manage(ctx, "add", "")
	if err != nil {
		return nil, o.finish(err)
	}
	u, key, err := s.d.Users.Add(ctx, req.Name, req.Role)
	if err == nil {
		o.row.Query += " " + u.Pseudonym
		o.rec.Query = o.row.Query
	}
	return userResult(u, key, o.finish(userError(err)))
}

// userResult is the answer of a change to user u, or err.
func userResult(u adaptbot.User, key string, err error) (*adaptbot.UserResult, error) {
	if err != nil {
		return nil, err
	}
	return &adaptbot.UserResult{User: u, Key: key}, nil
}

// RemoveUser deletes a user: their key and sessions stop working at once.
func (s *Service) RemoveUser(ctx context.Context, name string) (*adaptbot.UserResult, error) {
	ctx, o, err := s.manage(ctx, "remove", name)
	if err != nil {
		return nil, o.finish(err)
	}
	u, err := s.d.Users.Remove(ctx, name)
	res, err := userResult(u, "", o.finish(userError(err)))
	if res != nil {
		res.Removed = true
	}
	return res, err
}

// RotateKey gives a user a new key and returns it; the old one, and every
// session, stop working at once.
func (s *Service) RotateKey(ctx context.Context, name string) (*adaptbot.UserResult, error) {
	ctx, o, err := s.manage(ctx, "rotate", name)
	if err != nil {
		return nil, o.finish(err)
	}
	u, key, err := s.d.Users.Rotate(ctx, name)
	return userResult(u, key, o.finish(userError(err)))
}

// SetRole changes a user's role; it holds from their next request.
func (s *Service) SetRole(ctx context.Context, name string, role adaptbot.Role) (*adaptbot.UserResult, error) {
	ctx, o, err := s.manage(ctx, "role", name)
	if err != nil {
		return nil, o.finish(err)
	}
	u, err := s.d.Users.SetRole(ctx, name, role)
	return userResult(u, "", o.finish(userError(err)))
}

// Sessions returns the browser sign-ins of name that are on (never their
// cookies); NotFound when name is no user and has none.
func (s *Service) Sessions(ctx context.Context, name string) (*adaptbot.SessionList, error) {
	_, o, err := s.read(ctx, "users sessions", identity.Manage)
	if err == nil && s.d.Users == nil {
		err = errNoUsers
	}
	if err != nil {
		return nil, o.finish(err)
	}
	list := s.d.Users.Sessions(name)
	if list == nil {
		list = []users.Session{}
	}
	if _, ok := s.d.Users.Lookup(name); !ok && len(list) == 0 {
		return nil, o.finish(adaptbot.Errorf(adaptbot.NotFound, "no user named %q, and no sign-in of that name is on", name))
	}
	return &adaptbot.SessionList{Name: strings.ToLower(name), Sessions: list, Count: len(list)}, o.finish(nil)
}

// EndSessions ends the session id of name, or with id "" every one of
// them, and returns how many ended.
func (s *Service) EndSessions(ctx context.Context, name, id string) (*adaptbot.SessionsEnded, error) {
	ctx, o, err := s.manage(ctx, "end_sessions", name)
	if err != nil {
		return nil, o.finish(err)
	}
	n, err := s.d.Users.EndSessions(ctx, name, id)
	if err == nil && id != "" && n == 0 {
		err = adaptbot.Errorf(adaptbot.NotFound, "%s has no session %q that is on (adaptbot users sessions %s lists them)", name, id, name)
	}
	if err == nil && s.d.Log != nil {
		who := s.d.Users.Pseudonym(strings.ToLower(name))
		if u, ok := s.d.Users.Lookup(name); ok {
			who = u.Pseudonym
		}
		s.d.Log.Info("sessions ended", "user", who, "count", n, "by", identity.From(ctx).Pseudonym)
	}
	if err := o.finish(userError(err)); err != nil {
		return nil, err
	}
	return &adaptbot.SessionsEnded{Name: strings.ToLower(name), Ended: n}, nil
}
