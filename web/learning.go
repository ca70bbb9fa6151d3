package web

import (
	"bytes"
	"context"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// Learning from use at the edge: the handlers of repairs and feedback (the
// reads of failure cases and skills are the table's). The service does the
// work (service/learning.go); `adaptbot tools failures|repair` are cli's.

// handleToolRepair repairs a tool from its failure cases: POST
// /api/tools/<name>/repair, with an optional {"cases": ["id", ...]}. The
// answer is the build's result as JSON, or with Accept: text/event-stream
// its progress as Server-Sent Events, then one "result" (or "error") event.
func (s *Server) handleToolRepair() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req adaptbot.RepairRequest
		if len(bytes.TrimSpace(c.Body())) > 0 {
			if err := decodeJSON(c.Body(), &req, true); err != nil {
				return err
			}
		}
		name := c.Params("name")
		if !acceptsEvents(c) {
			return reply(c)(s.svc.Repair(c.UserContext(), name, req, adaptbot.Stream{}))
		}
		repair, err := s.svc.PrepareRepair(c.UserContext(), name, req)
		if err != nil {
			return err // before any event: a status the client can read
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			return repair.Run(ctx, adaptbot.Stream{Progress: func(ev adaptbot.Event) { send("progress", ev) }})
		})
		return nil
	}
}

// handleFeedback rates a chat answer: POST /api/requests/<id>/feedback
// with {"score": 1|-1, "comment": "..."}.
func (s *Server) handleFeedback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req adaptbot.FeedbackRequest
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		return reply(c)(s.svc.Feedback(c.UserContext(), c.Params("id"), req))
	}
}
