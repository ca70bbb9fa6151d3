package web

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"adaptbot/generator"
)

// handleBuild streams a build's progress as Server-Sent Events: "progress"
// events while it runs, then one "result" (or "error") event.
func (s *Server) handleBuild() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req generator.Request
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		if err := s.svc.CanBuild(c.UserContext(), req); err != nil {
			return err // before any event: a status the client can read
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			return s.svc.Build(ctx, req, func(ev generator.Event) { send("progress", ev) })
		})
		return nil
	}
}

func (s *Server) handleToolDelete() fiber.Handler {
	return func(c *fiber.Ctx) error {
		res, err := s.svc.Delete(c.UserContext(), c.Params("name"), c.QueryBool("force"))
		if err != nil {
			return err
		}
		return c.JSON(res)
	}
}

func (s *Server) handleToolRollback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req struct {
			Version int `json:"version"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		res, err := s.svc.Rollback(c.UserContext(), c.Params("name"), req.Version)
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tool": res.Tool, "version": res.Version, "restored": req.Version, "pending": res.Pending, "dependents": res.Dependents})
	}
}

// handleToolTest re-runs the tool's stored examples, as `adaptbot tools test`
// does: POST /api/tools/<name>/test.
func (s *Server) handleToolTest() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.Test(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleToolApprove makes a pending version serve (ADAPTBOT_REVIEW=on):
// POST /api/tools/<name>/approve.
func (s *Server) handleToolApprove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.svc.Approve(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tool": e.Name, "version": e.Version, "status": e.Status})
	}
}

// handleBuildPlan says what a build of the request would make (operation,
// name, summary, inputs) before it starts: POST /api/tools/plan with
// {"request": "..."}. The page shows it, then builds with op and tool set.
func (s *Server) handleBuildPlan() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req struct {
			Request string `json:"request"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		plan, err := s.svc.Plan(c.UserContext(), req.Request)
		if err != nil {
			return err
		}
		return c.JSON(plan)
	}
}
