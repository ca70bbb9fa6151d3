package main

import (
	"adaptbot/contract"
	"adaptbot/reqid"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/generator"
	"adaptbot/llm"
	"adaptbot/registry"
)

// builder makes, changes and deletes tools; *generator.Generator is one.
type builder interface {
	Build(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error)
}

// buildRow is the benchmark row of one build.
func buildRow(id string, req generator.Request, res *generator.Result, err error, latency time.Duration) benchmarks.Row {
	row := benchmarks.Row{RequestID: id, Query: req.Text, Intent: benchmarks.IntentBuild, Latency: latency,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA, GenerationTime: latency}
	op := req.Op
	if res != nil {
		op = res.Op
		row.BuildAttempts = res.Attempts
		row.GenerationTime = res.Duration
		if !res.OK {
			row.Error = res.Error
		}
	}
	if op == "" {
		op = generator.Create
	}
	row.Category = "build_" + string(op)
	if err != nil {
		row.Error = err.Error()
	}
	if row.Query == "" {
		row.Query = string(op) + " " + req.Tool
	}
	return row
}

// runBuild runs one build and logs its row.
func (s *Server) runBuild(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error) {
	if s.build == nil {
		return nil, llm.ErrNoModel
	}
	if err := s.link.writable(); err != nil {
		return nil, err
	}
	id := reqid.New()
	ctx = reqid.With(ctx, id) // the build's log lines and model calls name it
	began := time.Now()
	res, err := s.build.Build(ctx, req, progress)
	s.logRow(buildRow(id, req, res, err, time.Since(began)))
	s.keepBuild(id, req, res, err)
	return res, err
}

func buildError(err error) error {
	switch {
	case errors.Is(err, errClusterDown):
		return &apiError{Status: fiber.StatusServiceUnavailable, Msg: err.Error()}
	case errors.Is(err, cluster.ErrLocked):
		var locked *cluster.LockedError
		if errors.As(err, &locked) {
			return &apiError{Status: fiber.StatusConflict, Msg: locked.Error()}
		}
		return &apiError{Status: fiber.StatusConflict, Msg: "this tool is being changed on another replica; try again when that is done"}
	case errors.Is(err, generator.ErrConflict):
		return &apiError{Status: fiber.StatusConflict, Msg: "another build of this tool is already running; try again when it has finished"}
	case errors.Is(err, llm.ErrNoModel):
		return &apiError{Status: fiber.StatusServiceUnavailable, Msg: "Building tools needs a language model. " + err.Error()}
	case errors.Is(err, registry.ErrNotFound):
		return notFound(err.Error())
	}
	if _, ok := llm.AsError(err); ok || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return workError(err, "", 0)
	}
	return err
}

// handleBuild streams a build's progress as Server-Sent Events: "progress"
// events while it runs, then one "result" (or "error") event.
func (s *Server) handleBuild() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req generator.Request
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		req.Text = strings.TrimSpace(req.Text)
		if req.Text == "" && req.Tool == "" {
			return badRequest(`"request" is required: send {"request": "make a tool that ..."}`)
		}
		if s.build == nil || s.agent.Model() == nil {
			return buildError(llm.ErrNoModel)
		}
		if err := s.link.writable(); err != nil {
			return buildError(err) // 503 before any event
		}
		streamEvents(c, s.cfg.buildDeadline(), func(ctx context.Context, send func(event string, v any)) {
			res, err := s.runBuild(ctx, req, func(ev generator.Event) { send("progress", ev) })
			if err != nil {
				if _, ours := errors.AsType[*apiError](buildError(err)); !ours {
					s.log.Error("build failed", "err", err)
				}
				send("error", eventError(buildError(err)))
				return
			}
			send("result", res)
		})
		return nil
	}
}

func (s *Server) handleToolDelete() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.entry(c.Params("name"))
		if err != nil {
			return err
		}
		res, err := s.runBuild(c.UserContext(), generator.Request{Op: generator.Delete, Tool: e.Name}, nil)
		if err != nil {
			return buildError(err)
		}
		if !res.OK {
			return &apiError{Status: fiber.StatusUnprocessableEntity, Msg: res.Error}
		}
		return c.JSON(res)
	}
}

func (s *Server) handleToolRollback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		var req struct {
			Version int `json:"version"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		if req.Version <= 0 {
			return badRequest(`"version" must be a version number ≥ 1; GET /api/tools/` + name + `/versions lists them`)
		}
		if err := contract.ValidName(name); err != nil {
			return badRequest(err.Error())
		}
		if err := s.link.writable(); err != nil {
			return buildError(err)
		}
		release, err := s.link.lock(c.UserContext(), name)
		if err != nil {
			return buildError(err)
		}
		defer release()
		e, err := s.reg.Rollback(c.UserContext(), name, req.Version)
		if err != nil {
			if errors.Is(err, registry.ErrNotFound) {
				return notFound(err.Error())
			}
			return &apiError{Status: fiber.StatusUnprocessableEntity, Msg: err.Error()}
		}
		return c.JSON(fiber.Map{"tool": e.Name, "version": e.Version, "restored": req.Version})
	}
}
