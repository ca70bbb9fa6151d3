package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/gofiber/fiber/v2"

	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/service"
)

// Learning from use at the edge: where failure cases are kept, and the
// handlers of failures, repairs and feedback. The service does the work
// (service/learning.go); `adaptbot tools failures|repair` are cli's.

// failuresDir is where a server on files keeps its tools' failure cases,
// one JSON file per tool: beside the tools' history, written by the server
// alone.
func failuresDir(cfg config.Config) string { return filepath.Join(cfg.ToolsDir, ".failures") }

// learningParts are the failure store and what keeps it: the writer of
// its changes, and in a cluster the follower of the other replicas'.
type learningParts struct {
	store  *failures.Store
	follow func(ctx context.Context, store *failures.Store) error // nil on files
}

// openFailures opens the failure store: files beside the tools, or with a
// cluster link, the cluster's bucket.
func openFailures(ctx context.Context, cfg config.Config, link *cluster.Link, log *slog.Logger) (*learningParts, error) {
	var backend failures.Backend = &failures.Files{Dir: failuresDir(cfg)}
	parts := &learningParts{}
	if link != nil {
		kv, err := cluster.OpenFailures(ctx, link.NC, log)
		if err != nil {
			return nil, err
		}
		backend, parts.follow = kv, kv.Follow
	}
	st, err := failures.Load(ctx, backend, failures.Options{Keep: cfg.FailuresKeep, Log: log})
	if st == nil {
		return nil, fmt.Errorf("failure cases: %w", err)
	}
	if err != nil {
		log.Warn("failures: some failure cases were not read", "err", err)
	}
	parts.store = st
	return parts, nil
}

// learning is the service's configuration for learning from use.
func (p *learningParts) learning(cfg config.Config) service.Learning {
	if p == nil {
		return service.Learning{}
	}
	return service.Learning{Failures: p.store, AutoRepair: cfg.AutoRepair, RepairAfter: cfg.RepairAfter, RepairEvery: cfg.RepairEvery,
		Skills: cfg.Skills, SkillAfter: cfg.SkillAfter}
}

// start writes the store's changes, follows the cluster's, and runs the
// automatic repairs, until the returned stop, which waits for the last
// changes to be written.
func (p *learningParts) start(svc *service.Service, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.store.Run(ctx) })
	wg.Go(func() { svc.RunLearning(ctx) })
	if p.follow != nil {
		wg.Go(func() {
			if err := p.follow(ctx, p.store); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("cluster: stopped following the failure cases", "err", err)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

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
