package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot/api"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// The users API (admin only; `adaptbot users` is its client, in cli). A key
// is shown once: in the answer to the request that made it, sent with
// Cache-Control: no-store, and never logged.

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
func (s *Server) handleUserList() fiber.Handler {
	return func(c *fiber.Ctx) error {
		list, err := s.svc.ListUsers(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"users": list, "count": len(list)})
	}
}

// handleUserAdd is POST /api/users {"name", "role"}: 201 with the key.
func (s *Server) handleUserAdd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		u, key, err := s.svc.AddUser(c.UserContext(), req.Name, identity.Role(req.Role))
		if err != nil {
			return err
		}
		s.log.Info("user added", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		note := ""
		if s.auth.auth.SingleUser() {
			note = singleUserNote
		}
		return keyAnswer(c, fiber.StatusCreated, u, key, note)
	}
}

// handleUserRole is PATCH /api/users/NAME {"role"}.
func (s *Server) handleUserRole() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		u, err := s.svc.SetRole(c.UserContext(), c.Params("name"), identity.Role(req.Role))
		if err != nil {
			return err
		}
		s.log.Info("user's role changed", "user", u.Pseudonym, "role", u.Role, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u})
	}
}

// handleUserRemove is DELETE /api/users/NAME: their key and sessions stop
// working at once.
func (s *Server) handleUserRemove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, err := s.svc.RemoveUser(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		s.log.Info("user removed", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(fiber.Map{"user": u, "removed": true})
	}
}

// handleUserRotate is POST /api/users/NAME/rotate: a new key; the old one
// and its sessions stop working at once.
func (s *Server) handleUserRotate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, key, err := s.svc.RotateKey(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		s.log.Info("user's key rotated", "user", u.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return keyAnswer(c, fiber.StatusOK, u, key, "")
	}
}

// handleUserSessions is GET /api/users/NAME/sessions: the browser
// sign-ins of NAME that are on (never their cookies).
func (s *Server) handleUserSessions() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		list, err := s.svc.UserSessions(c.UserContext(), name)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "sessions": list, "count": len(list)})
	}
}

// handleUserSessionsEnd is DELETE /api/users/NAME/sessions (every one) or
// DELETE /api/users/NAME/sessions/ID (that one): they end at once, on
// every replica for a stored user.
func (s *Server) handleUserSessionsEnd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name, id := c.Params("name"), c.Params("id")
		n, err := s.svc.EndSessions(c.UserContext(), name, id)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"name": strings.ToLower(name), "ended": n})
	}
}
