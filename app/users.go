package main

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot/api"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// The users API (admin only; `adaptbot users` is its client, in cli). A key
// is shown once: in the answer to the request that made it, sent with
// Cache-Control: no-store, and never logged.

// userOps are the service's operations on users: each checks that the
// caller may manage users, and writes its row and trace (*service.Service).
type userOps interface {
	ListUsers(ctx context.Context) ([]users.Info, error)
	AddUser(ctx context.Context, name string, role identity.Role) (users.Info, string, error)
	RemoveUser(ctx context.Context, name string) (users.Info, error)
	RotateKey(ctx context.Context, name string) (users.Info, string, error)
	SetRole(ctx context.Context, name string, role identity.Role) (users.Info, error)
	UserSessions(ctx context.Context, name string) ([]users.Session, error)
	EndSessions(ctx context.Context, name, id string) (int, error)
}

// userBody decodes a users request's body.
func userBody(c *fiber.Ctx) (api.UserRequest, error) {
	var req api.UserRequest
	return req, decodeJSON(c.Body(), &req, true)
}

// keyAnswer is an answer that carries a new key: never cached.
func keyAnswer(c *fiber.Ctx, status int, u users.Info, key, note string) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	body := fiber.Map{"user": u, "key": key}
	if note != "" {
		body["note"] = note
	}
	return c.Status(status).JSON(body)
}

// singleUserNote is said when a user is added to a server that is
// single-user until it restarts.
const singleUserNote = "this server is single-user on loopback until it restarts: after that, every caller needs a key or a sign-in, so make sure an admin has one"

// handleUserList is GET /api/users.
func (e *authEdge) handleUserList() fiber.Handler {
	return func(c *fiber.Ctx) error {
		list, err := e.ops.ListUsers(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"users": list, "count": len(list)})
	}
}

// handleUserAdd is POST /api/users {"name", "role"}: 201 with the key.
func (e *authEdge) handleUserAdd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		u, key, err := e.ops.AddUser(c.UserContext(), req.Name, identity.Role(req.Role))
		if err != nil {
			return err
		}
		e.log.Info("user added", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		note := ""
		if e.auth.SingleUser() {
			note = singleUserNote
		}
		return keyAnswer(c, fiber.StatusCreated, u, key, note)
	}
}

// handleUserRole is PATCH /api/users/NAME {"role"}.
func (e *authEdge) handleUserRole() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		u, err := e.ops.SetRole(c.UserContext(), c.Params("name"), identity.Role(req.Role))
		if err != nil {
			return err
		}
		e.log.Info("user's role changed", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u})
	}
}

// handleUserRemove is DELETE /api/users/NAME: their key and sessions stop
// working at once.
func (e *authEdge) handleUserRemove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, err := e.ops.RemoveUser(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		e.log.Info("user removed", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u, "removed": true})
	}
}

// handleUserRotate is POST /api/users/NAME/rotate: a new key; the old one
// and its sessions stop working at once.
func (e *authEdge) handleUserRotate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, key, err := e.ops.RotateKey(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		e.log.Info("user's key rotated", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return keyAnswer(c, fiber.StatusOK, u, key, "")
	}
}

// handleUserSessions is GET /api/users/NAME/sessions: the browser
// sign-ins of NAME that are on (never their cookies).
func (e *authEdge) handleUserSessions() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		list, err := e.ops.UserSessions(c.UserContext(), name)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "sessions": list, "count": len(list)})
	}
}

// handleUserSessionsEnd is DELETE /api/users/NAME/sessions (every one) or
// DELETE /api/users/NAME/sessions/ID (that one): they end at once, on
// every replica for a stored user.
func (e *authEdge) handleUserSessionsEnd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name, id := c.Params("name"), c.Params("id")
		n, err := e.ops.EndSessions(c.UserContext(), name, id)
		if err != nil {
			return err
		}
		who := e.store.Pseudonym(strings.ToLower(name))
		if u, ok := e.store.Lookup(name); ok {
			who = u.Pseudonym
		}
		e.log.Info("sessions ended", "user", who, "count", n, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "ended": n})
	}
}
