package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"adaptbot/agent"
	"adaptbot/generator"
	"adaptbot/traces"
)

// Workspace is what the pages for people need beyond the API: the store of
// recent requests' traces and the model check. A nil *Workspace (the CLI,
// some tests) stores nothing and checks nothing.
type Workspace struct {
	Traces *traces.Store
	Model  *modelCheck
	stop   context.CancelFunc
}

// openWorkspace opens the trace store (unless ADAPTBOT_TRACES=off) and starts
// checking the model: at once, then every minute.
func openWorkspace(ctx context.Context, cfg Config, log *slog.Logger) (*Workspace, error) {
	ws := &Workspace{Model: newModelCheck(cfg.LLM)}
	if cfg.Traces != "" {
		st, err := traces.Open(cfg.Traces, traces.Options{})
		if err != nil {
			return nil, err
		}
		ws.Traces = st
	}
	ctx, ws.stop = context.WithCancel(ctx)
	go ws.Model.Run(ctx, modelCheckEvery, func(st modelStatus) {
		if *st.Reachable {
			log.Info("model answers", "provider", st.Provider, "url", st.URL)
		} else {
			log.Warn("model does not answer", "provider", st.Provider, "url", st.URL, "err", st.Error)
		}
	})
	return ws, nil
}

// Close stops the model check and closes the trace store.
func (w *Workspace) Close() error {
	if w == nil {
		return nil
	}
	w.stop()
	if w.Traces != nil {
		return w.Traces.Close()
	}
	return nil
}

// keepTrace stores one request's record; a failure is logged, never fatal.
func (s *Server) keepTrace(r traces.Record) {
	if s.ws == nil || s.ws.Traces == nil {
		return
	}
	if err := s.ws.Traces.Add(r); err != nil {
		s.log.Error("traces: record not stored", "err", err, "request_id", r.ID)
	}
}

// keepResult stores a request whose result encodes to JSON.
func (s *Server) keepResult(id, kind, query, tool string, result any, err error) {
	r := traces.Record{ID: id, Kind: kind, Time: time.Now().UTC(), Query: query, Tool: tool}
	if err != nil {
		r.Error = err.Error()
	}
	if result != nil {
		if b, merr := json.Marshal(result); merr == nil {
			r.Result = b
		}
	}
	s.keepTrace(r)
}

// handleRequest returns one stored request: GET /api/requests/<id>.
func (s *Server) handleRequest() fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Params("id")
		if s.ws == nil || s.ws.Traces == nil {
			return notFound("requests are not stored on this server (ADAPTBOT_TRACES=off)")
		}
		if !isRequestID(id) {
			// Not one of ours (reqid.New's 16 hex digits): answer without
			// scanning the store's files for it.
			return notFound("no stored request with ID " + id + "; request IDs are 16 hexadecimal digits")
		}
		r, err := s.ws.Traces.Get(id)
		if errors.Is(err, traces.ErrNotFound) {
			return notFound("no stored request with ID " + id + "; the store keeps the most recent ones")
		}
		if err != nil {
			return err
		}
		return c.JSON(r)
	}
}

// handleRequests lists the newest stored requests: GET /api/requests.
func (s *Server) handleRequests() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if s.ws == nil || s.ws.Traces == nil {
			return c.JSON(fiber.Map{"requests": []traces.Record{}})
		}
		n := min(max(c.QueryInt("limit", 50), 1), 500)
		recent := s.ws.Traces.Recent(n)
		for i := range recent {
			recent[i].Result = nil // the list is an index; GET one for the whole
		}
		return c.JSON(fiber.Map{"requests": recent})
	}
}

// keepChat stores a chat's result JSON (its trace included) as the client
// got it, or the error it failed with.
func (s *Server) keepChat(id, message string, res *agent.Result, err error) {
	if res == nil {
		s.keepResult(id, traces.Chat, message, "", nil, err)
		return
	}
	s.keepResult(id, traces.Chat, message, res.Tool, chatResponse{Result: res, RequestID: id}, err)
}

// keepRun stores a direct run: the arguments, the output (cut like a trace
// step's) and the time.
func (s *Server) keepRun(id, tool string, args []byte, output string, elapsed time.Duration, err error) {
	out := fiber.Map{"tool": tool, "ms": float64(elapsed.Microseconds()) / 1000, "request_id": id}
	if json.Valid(args) {
		out["arguments"] = json.RawMessage(args)
	}
	if err == nil {
		out["output"] = cutText(output, 2<<10)
	}
	s.keepResult(id, traces.Run, string(args), tool, out, err)
}

// keepBuild stores a build's result, with each attempt's errors.
func (s *Server) keepBuild(id string, req generator.Request, res *generator.Result, err error) {
	tool := req.Tool
	var result any
	if res != nil {
		tool, result = res.Tool, res
		if err == nil && !res.OK {
			err = errors.New(res.Error)
		}
	}
	s.keepResult(id, traces.Build, req.Text, tool, result, err)
}

// cutText cuts s to at most n bytes, on a rune boundary, with a marker.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (cut)"
}

// isRequestID reports whether id has the shape reqid.New gives.
func isRequestID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
