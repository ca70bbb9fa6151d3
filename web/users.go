package web

import (
	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/identity"
)

// The users API (admin only; `adaptbot users` is its client, in cli). A key
// is shown once: in the answer to the request that made it, sent with
// Cache-Control: no-store, and never logged.

// userBody decodes a users request's body.
func userBody(c *fiber.Ctx) (adaptbot.UserRequest, error) {
	var req adaptbot.UserRequest
	return req, decodeJSON(c.Body(), &req, true)
}

// keyAnswer is an answer that carries a new key: never cached.
func keyAnswer(c *fiber.Ctx, status int, res *adaptbot.UserResult) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(status).JSON(res)
}

// singleUserNote is said when a user is added to a server that is
// single-user until it restarts.
const singleUserNote = "this server is single-user on loopback until it restarts: after that, every caller needs a key or a sign-in, so make sure an admin has one"

// handleUserAdd is POST /api/users {"name", "role"}: 201 with the key.
func (s *Server) handleUserAdd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		res, err := s.svc.AddUser(c.UserContext(), req)
		if err != nil {
			return err
		}
		s.log.Info("user added", "user", res.User.Pseudonym, "role", res.User.Role, "by", identity.From(c.UserContext()).Pseudonym)
		if s.auth.auth.SingleUser() {
			res.Note = singleUserNote
		}
		return keyAnswer(c, fiber.StatusCreated, res)
	}
}

// handleUserRole is PATCH /api/users/NAME {"role"}.
func (s *Server) handleUserRole() fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, err := userBody(c)
		if err != nil {
			return err
		}
		res, err := s.svc.SetRole(c.UserContext(), c.Params("name"), req.Role)
		if err != nil {
			return err
		}
		s.log.Info("user's role changed", "user", res.User.Pseudonym, "role", res.User.Role, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(res)
	}
}

// handleUserRemove is DELETE /api/users/NAME: their key and sessions stop
// working at once.
func (s *Server) handleUserRemove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		res, err := s.svc.RemoveUser(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		s.log.Info("user removed", "user", res.User.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return c.JSON(res)
	}
}

// handleUserRotate is POST /api/users/NAME/rotate: a new key; the old one
// and its sessions stop working at once.
func (s *Server) handleUserRotate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		res, err := s.svc.RotateKey(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		s.log.Info("user's key rotated", "user", res.User.Pseudonym, "by", identity.From(c.UserContext()).Pseudonym)
		return keyAnswer(c, fiber.StatusOK, res)
	}
}

// handleUserSessionsEnd is DELETE /api/users/NAME/sessions (every one) or
// DELETE /api/users/NAME/sessions/ID (that one): they end at once, on
// every replica for a stored user.
func (s *Server) handleUserSessionsEnd() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return reply(c)(s.svc.EndSessions(c.UserContext(), c.Params("name"), c.Params("id")))
	}
}
