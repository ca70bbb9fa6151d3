package web

import (
	"bytes"
	"context"

	"github.com/gofiber/fiber/v2"

	"adaptbot/generator"
	"adaptbot/service"
)

// Learning from use at the edge: where failure cases are kept, and the
// handlers of failures, repairs and feedback. The service does the work
// (service/learning.go); `adaptbot tools failures|repair` are cli's.

// handleToolFailures answers a tool's failure cases and repairs: GET
// /api/tools/<name>/failures.
func (s *Server) handleToolFailures() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.Failures(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleFailureSummary counts every tool's failure cases, for /tools: GET
// /api/failures.
func (s *Server) handleFailureSummary() fiber.Handler {
	return func(c *fiber.Ctx) error {
		sum, err := s.svc.FailureSummary(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tools": sum})
	}
}

// handleSkills lists the chains of tools that recur in chats and the
// skills proposed for them: GET /api/skills.
func (s *Server) handleSkills() fiber.Handler {
	return func(c *fiber.Ctx) error {
		skills, err := s.svc.Skills(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"skills": skills})
	}
}

// handleCaseConfirm makes a thumbs-down case open: POST
// /api/tools/<name>/failures/<id>/confirm.
func (s *Server) handleCaseConfirm() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.ConfirmCase(c.UserContext(), c.Params("name"), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleCaseDismiss removes a case: DELETE /api/tools/<name>/failures/<id>.
func (s *Server) handleCaseDismiss() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.DismissCase(c.UserContext(), c.Params("name"), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleToolRepair repairs a tool from its failure cases: POST
// /api/tools/<name>/repair, with an optional {"cases": ["id", ...]}. The
// answer is the build's result as JSON, or with Accept: text/event-stream
// its progress as Server-Sent Events, then one "result" (or "error") event.
func (s *Server) handleToolRepair() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req service.RepairRequest
		if len(bytes.TrimSpace(c.Body())) > 0 {
			if err := decodeJSON(c.Body(), &req, true); err != nil {
				return err
			}
		}
		name := c.Params("name")
		if !acceptsEvents(c) {
			res, err := s.svc.Repair(c.UserContext(), name, req, nil)
			if err != nil {
				return err
			}
			return c.JSON(res)
		}
		if err := s.svc.CanRepair(c.UserContext(), name, req); err != nil {
			return err // before any event: a status the client can read
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			return s.svc.Repair(ctx, name, req, func(ev generator.Event) { send("progress", ev) })
		})
		return nil
	}
}

// handleFeedback rates a chat answer: POST /api/requests/<id>/feedback
// with {"score": 1|-1, "comment": "..."}.
func (s *Server) handleFeedback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req service.FeedbackRequest
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		res, err := s.svc.Feedback(c.UserContext(), c.Params("id"), req)
		if err != nil {
			return err
		}
		return c.JSON(res)
	}
}
