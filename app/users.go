package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/api"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/service"
)

// The users API (admin only; `adaptbot users` is its client, in cli). A key
// is shown once: in the answer to the request that made it, sent with
// Cache-Control: no-store, and never logged.

// mayManage refuses a caller who may not manage users (403), with the one
// permission check every operation makes.
func mayManage(c *fiber.Ctx) error {
	return service.Permit(identity.From(c.UserContext()), identity.Manage)
}

// manageBody refuses a caller who may not manage users, and decodes the
// request's body.
func manageBody(c *fiber.Ctx) (api.UserRequest, error) {
	var req api.UserRequest
	if err := mayManage(c); err != nil {
		return req, err
	}
	return req, decodeJSON(c.Body(), &req, true)
}

// userError turns the store's errors into statuses.
func userError(err error) error {
	switch {
	case errors.Is(err, users.ErrInvalid):
		return badRequest(err.Error())
	case errors.Is(err, users.ErrNotFound):
		return notFound(err.Error())
	case errors.Is(err, users.ErrExists):
		return &adaptbot.Error{Kind: adaptbot.Conflict, Msg: err.Error()}
	}
	return err
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
		if err := mayManage(c); err != nil {
			return err
		}
		list := e.store.List()
		return c.JSON(fiber.Map{"users": list, "count": len(list)})
	}
}

// handleUserAdd is POST /api/users {"name", "role"}: 201 with the key.
func (e *authEdge) handleUserAdd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := manageBody(c)
		if err != nil {
			return err
		}
		u, key, err := e.store.Add(c.UserContext(), req.Name, identity.Role(req.Role))
		if err != nil {
			return userError(err)
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
		req, err := manageBody(c)
		if err != nil {
			return err
		}
		u, err := e.store.SetRole(c.UserContext(), c.Params("name"), identity.Role(req.Role))
		if err != nil {
			return userError(err)
		}
		e.log.Info("user's role changed", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u})
	}
}

// handleUserRemove is DELETE /api/users/NAME: their key and sessions stop
// working at once.
func (e *authEdge) handleUserRemove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		u, err := e.store.Remove(c.UserContext(), c.Params("name"))
		if err != nil {
			return userError(err)
		}
		e.log.Info("user removed", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u, "removed": true})
	}
}

// handleUserRotate is POST /api/users/NAME/rotate: a new key; the old one
// and its sessions stop working at once.
func (e *authEdge) handleUserRotate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		u, key, err := e.store.Rotate(c.UserContext(), c.Params("name"))
		if err != nil {
			return userError(err)
		}
		e.log.Info("user's key rotated", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return keyAnswer(c, fiber.StatusOK, u, key, "")
	}
}

// handleUserSessions is GET /api/users/NAME/sessions: the browser
// sign-ins of NAME that are on (never their cookies).
func (e *authEdge) handleUserSessions() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		name := c.Params("name")
		list := e.store.Sessions(name)
		if list == nil {
			list = []users.Session{}
		}
		if _, ok := e.store.Lookup(name); !ok && len(list) == 0 {
			return notFound(fmt.Sprintf("no user named %q, and no sign-in of that name is on", name))
		}
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "sessions": list, "count": len(list)})
	}
}

// handleUserSessionsEnd is DELETE /api/users/NAME/sessions (every one) or
// DELETE /api/users/NAME/sessions/ID (that one): they end at once, on
// every replica for a stored user.
func (e *authEdge) handleUserSessionsEnd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := mayManage(c); err != nil {
			return err
		}
		name, id := c.Params("name"), c.Params("id")
		n, err := e.store.EndSessions(c.UserContext(), name, id)
		if err != nil {
			return userError(err)
		}
		if id != "" && n == 0 {
			return notFound(fmt.Sprintf("%s has no session %q that is on (adaptbot users sessions %s lists them)", name, id, name))
		}
		who := e.store.Pseudonym(strings.ToLower(name))
		if u, ok := e.store.Lookup(name); ok {
			who = u.Pseudonym
		}
		e.log.Info("sessions ended", "user", who, "count", n, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "ended": n})
	}
}
