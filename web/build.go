package web

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// handleBuild streams a build's progress as Server-Sent Events: "progress"
// events while it runs, then one "result" (or "error") event.
func (s *Server) handleBuild() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req adaptbot.BuildRequest
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		build, err := s.svc.PrepareBuild(c.UserContext(), req)
		if err != nil {
			return err // before any event: a status the client can read
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			return build.Run(ctx, adaptbot.Stream{Progress: func(ev adaptbot.Event) { send("progress", ev) }})
		})
		return nil
	}
}

// handleToolDelete is DELETE /api/tools/<name>, ?force=true to delete a
// tool other tools use.
func (s *Server) handleToolDelete() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return reply(c)(s.svc.Delete(c.UserContext(), c.Params("name"), c.QueryBool("force")))
	}
}
