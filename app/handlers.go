package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/reqid"
	"adaptbot/sandbox"
	"adaptbot/templates"
	"adaptbot/toolbox"
)

// maxHistory caps the conversation a client may send with a message.
const maxHistory = 50

func (s *Server) modelName() string {
	if m := s.agent.Model(); m != nil {
		return m.Name()
	}
	return ""
}

func (s *Server) handleIndex() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var b bytes.Buffer
		err := templates.Pages.ExecuteTemplate(&b, "index.html", map[string]any{
			"Model":     s.modelName(),
			"Hint":      llm.ConfigureHint,
			"Tools":     s.reg.Len(),
			"BuildOpen": s.buildAllowed(""),
		})
		if err != nil {
			return err
		}
		c.Type("html", "utf-8")
		return c.Send(b.Bytes())
	}
}

func (s *Server) handleHealth() fiber.Handler {
	return func(c *fiber.Ctx) error {
		body := fiber.Map{
			"status": "ok",
			"model":  nil,
			"tools":  s.reg.Len(),
		}
		body["model"] = s.modelHealth()
		st := s.runner.Stats()
		body["sandbox"] = st
		if st.Live+st.Starting < st.Size {
			// The pool is replacing workers; calls still queue and run.
			body["status"] = "degraded"
		}
		if s.hub != nil {
			body["mcp"] = fiber.Map{"servers": len(s.hub.Servers()), "tools": len(s.hub.Tools())}
		}
		if w := s.reg.Warnings(); len(w) > 0 {
			body["warnings"] = w
		}
		if st := s.link.status(); st != nil {
			// Not "degraded" when NATS is away: chats go on.
			body["cluster"] = st
		}
		return c.JSON(body)
	}
}

type chatRequest struct {
	Message string        `json:"message"`
	History []llm.Message `json:"history"`
}

type chatResponse struct {
	*agent.Result
	RequestID string `json:"request_id"`
}

// handleChat answers one message. A client that accepts text/event-stream
// gets Server-Sent Events instead of one JSON body: a "progress" event for
// each step of a build the message asks for, a "token" event ({"text"}) for
// each piece of the answer as the model writes it, then one "result" event
// (the JSON body) or one "error" event ({"error", "status", "request_id"}).
func (s *Server) handleChat() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req chatRequest
		if err := decodeJSON(c.Body(), &req, false); err != nil {
			return err
		}
		req.Message = strings.TrimSpace(req.Message)
		if req.Message == "" {
			return badRequest(`"message" is required: send {"message": "..."}`)
		}
		if err := s.checkSizes(req); err != nil {
			return err
		}
		for i, m := range req.History {
			if m.Role != llm.User && m.Role != llm.Assistant {
				return badRequest(fmt.Sprintf(`history[%d].role is %q; use "user" or "assistant"`, i, m.Role))
			}
		}
		// The one authorization rule (mayChange) reaches builds asked for in chat.
		allowed := s.mayChange(c)
		if !acceptsEvents(c) {
			ctx, stop := watchConn(c.UserContext(), c.Context().Conn())
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, s.cfg.chatDeadline())
			defer cancel()
			out, err := s.chat(agent.AllowChanges(ctx, allowed), req, nil, nil)
			if err != nil {
				return err
			}
			return c.JSON(out)
		}
		streamEvents(c, s.cfg.chatDeadline(), func(ctx context.Context, send func(event string, v any)) {
			out, err := s.chat(agent.AllowChanges(ctx, allowed), req,
				func(st agent.BuildStep) { send("progress", st) },
				func(text string) { send("token", tokenEvent{Text: text}) })
			if err != nil {
				send("error", eventError(err))
				return
			}
			send("result", out)
		})
		return nil
	}
}

// tokenEvent is the body of a "token" event: a piece of the answer.
type tokenEvent struct {
	Text string `json:"text"`
}

// chat runs one message through the agent and logs its row. Its errors are
// *apiError. The request ID goes into the context, so the agent's and the
// model's log lines name it.
func (s *Server) chat(ctx context.Context, req chatRequest, progress func(agent.BuildStep), stream func(string)) (chatResponse, error) {
	id := reqid.From(ctx)
	if id == "" {
		id = reqid.New()
		ctx = reqid.With(ctx, id)
	}
	began := time.Now()
	res, err := s.agent.Chat(ctx, agent.Request{Message: req.Message, History: req.History, Progress: progress, Stream: stream})
	row := chatRow(id, req.Message, res, err, time.Since(began))
	s.logRow(row)
	s.keepChat(id, req.Message, res, err)
	if err != nil {
		ae := workError(err, id, s.cfg.chatDeadline())
		switch {
		case ae.Status == statusClientClosed || clientGone(ctx):
			s.log.Info("chat abandoned by its client", "request_id", id, "err", err)
		case ae.Status >= 500:
			s.log.Error("chat failed", "request_id", id, "err", err)
		}
		if res != nil && errors.Is(err, agent.ErrForbidden) {
			ae.Msg = res.Response
			ae.Extra["response"], ae.Extra["intent"] = res.Response, res.Intent
		}
		return chatResponse{}, ae
	}
	return chatResponse{Result: res, RequestID: id}, nil
}

// acceptsEvents reports whether the client asked for Server-Sent Events.
func acceptsEvents(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/event-stream")
}

// streamEvents answers with Server-Sent Events written by run, which gets a
// context bounded by timeout and cancelled when the client goes away. run
// executes after the handler has returned, so it must not touch c.
func streamEvents(c *fiber.Ctx, timeout time.Duration, run func(ctx context.Context, send func(event string, v any))) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	release := holdSlot(c)
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		ctx, stop := watchConn(context.Background(), conn)
		defer stop()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var mu sync.Mutex // progress may be reported from other goroutines
		send := func(event string, v any) {
			data, err := json.Marshal(v)
			if err != nil {
				data, _ = json.Marshal(fiber.Map{"error": "internal error: " + err.Error()})
				event = "error"
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
			if err := w.Flush(); err != nil {
				cancel() // the client went away: stop working for it
			}
		}
		run(ctx, send)
	})
}

// eventError is the body of an "error" event: what the JSON error body
// would have said, with its status.
func eventError(err error) fiber.Map {
	// As errorHandler does for a JSON body: anything but an *apiError is
	// ours, and its details belong in the log, not in front of a person.
	body := fiber.Map{"error": "internal error; the server log has the details", "status": fiber.StatusInternalServerError}
	var ae *apiError
	if errors.As(err, &ae) {
		body["error"] = ae.Msg
		body["status"] = ae.Status
		for k, v := range ae.Extra {
			body[k] = v
		}
		if ae.RetryAfter > 0 {
			body["retry_after"] = retryAfterSeconds(ae.RetryAfter)
		}
	}
	return body
}

func chatRow(id, query string, res *agent.Result, err error, latency time.Duration) benchmarks.Row {
	row := benchmarks.Row{RequestID: id, Query: query, Intent: benchmarks.IntentChat, Latency: latency}
	if err != nil {
		row.Error = err.Error()
	}
	if res == nil {
		return row
	}
	row.Intent = res.Intent
	// category is the first tool that ran (or general, need_tool); tools
	// lists every tool that ran, in order.
	row.Category = res.Path
	row.Tools = res.Tools
	row.ParamExtraction, row.ToolExecution = tri(res.Extraction), tri(res.Execution)
	if res.Error != "" && row.Error == "" {
		row.Error = res.Error
	}
	row.LLMCalls, row.PromptTokens, row.CompletionTokens = res.LLMCalls, res.Usage.PromptTokens, res.Usage.CompletionTokens
	row.DiscoveryRequests, row.ToolsLoaded = len(res.Discovery), len(res.ToolsLoaded)
	for _, st := range res.Trace {
		row.NodeTimes = append(row.NodeTimes, benchmarks.NodeTime{Node: st.Node, Duration: st.Duration})
	}
	if b := res.ToolBuild; b != nil {
		row.Category = "build_" + b.Action
		row.BuildAttempts = b.Attempts
		row.GenerationTime = latency
	}
	return row
}

// decodeJSON decodes a request body into v with a clear message on failure.
func decodeJSON(body []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("request body is empty; send JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("request body has data after the JSON value")
	}
	return nil
}

type toolView struct {
	registry.Entry
	Code     string          `json:"code,omitempty"`
	Serving  bool            `json:"serving"`
	Examples json.RawMessage `json:"examples,omitempty"`
}

func (s *Server) handleToolList() fiber.Handler {
	return func(c *fiber.Ctx) error {
		entries := s.reg.List()
		out := make([]toolView, 0, len(entries))
		for _, e := range entries {
			_, serving := s.reg.Tool(e.Name)
			out = append(out, toolView{Entry: e, Serving: serving})
		}
		return c.JSON(fiber.Map{"tools": out, "count": len(out)})
	}
}

// entry returns the named tool's entry, or a 4xx.
func (s *Server) entry(name string) (registry.Entry, error) {
	if err := contract.ValidName(name); err != nil {
		return registry.Entry{}, badRequest(err.Error())
	}
	e, ok := s.reg.Entry(name)
	if !ok {
		return registry.Entry{}, notFound(toolbox.NotFound(name).Error())
	}
	return e, nil
}

func (s *Server) handleToolGet() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.entry(c.Params("name"))
		if err != nil {
			return err
		}
		v := toolView{Entry: e}
		if t, ok := s.reg.Tool(e.Name); ok {
			v.Code, v.Serving = string(t.Code), true
		}
		if ex := s.reg.Examples(e.Name); json.Valid(ex) {
			v.Examples = ex
		}
		return c.JSON(v)
	}
}

func (s *Server) handleToolRun() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.entry(c.Params("name"))
		if err != nil {
			return err
		}
		t, ok := s.box.Tool(e.Name)
		if !ok {
			return &apiError{Status: fiber.StatusConflict, Msg: fmt.Sprintf("tool %s has no working version: %s", e.Name, e.LastError)}
		}
		out, elapsed, id, err := s.runTool(c.UserContext(), t, c.Body())
		ms := float64(elapsed.Microseconds()) / 1000
		name := t.Spec().Name
		if ae, ok := errors.AsType[*toolbox.ArgsError](err); ok {
			return &apiError{Status: fiber.StatusBadRequest, Msg: ae.Reason, Extra: fiber.Map{"parameters": ae.Schema}}
		}
		if err != nil {
			status := fiber.StatusUnprocessableEntity
			if sandbox.KindOf(err) == sandbox.KindUnavailable {
				status = fiber.StatusServiceUnavailable
			}
			return &apiError{Status: status, Msg: err.Error(), Extra: fiber.Map{"tool": name, "kind": sandbox.KindOf(err), "ms": ms, "request_id": id}}
		}
		return c.JSON(fiber.Map{"tool": name, "version": t.Spec().Version, "output": out, "ms": ms, "request_id": id})
	}
}

// runTool runs a tool directly, without a model, and logs its RUN row: the
// HTTP API and the CLI share it. The tool validates args first: an
// *toolbox.ArgsError means it did not run.
func (s *Server) runTool(ctx context.Context, t toolbox.Tool, args []byte) (string, time.Duration, string, error) {
	args = bytes.TrimSpace(args)
	id := reqid.New()
	ctx = reqid.With(ctx, id) // the sandbox's log lines name the run
	began := time.Now()
	name := t.Spec().Name
	query := string(args)
	if query == "" {
		query = "{}"
	}
	row := benchmarks.Row{RequestID: id, Query: query, Intent: benchmarks.IntentRun, Category: name, ParamExtraction: benchmarks.NA}
	out, err := t.Call(ctx, args)
	if _, invalid := errors.AsType[*toolbox.ArgsError](err); invalid {
		row.ToolExecution = benchmarks.NA
	} else {
		row.ToolExecution = benchmarks.TriOf(err == nil)
	}
	elapsed := time.Since(began)
	row.Latency = elapsed
	if err != nil {
		row.Error = err.Error()
	}
	s.logRow(row)
	s.keepRun(id, name, args, out, elapsed, err)
	return out, elapsed, id, err
}

func (s *Server) handleToolVersions() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		if err := contract.ValidName(name); err != nil {
			return badRequest(err.Error())
		}
		vs, err := s.reg.Versions(name)
		if errors.Is(err, registry.ErrNotFound) {
			return notFound(err.Error())
		}
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tool": name, "versions": vs})
	}
}

// buildAllowed reports whether a request with this Authorization header may
// build, change or run tools directly: always on loopback, otherwise only
// with the admin token.
func (s *Server) buildAllowed(auth string) bool {
	if s.cfg.Loopback() {
		return true
	}
	if s.cfg.AdminToken == "" {
		return false
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AdminToken)) == 1
}

func (s *Server) requireAdmin() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if s.mayChange(c) {
			return c.Next()
		}
		if s.cfg.AdminToken == "" {
			return &apiError{Status: fiber.StatusForbidden, Msg: "building, changing and running tools directly are disabled because the server listens beyond loopback without ADAPTBOT_ADMIN_TOKEN; set it and send Authorization: Bearer <token>"}
		}
		return &apiError{Status: fiber.StatusForbidden, Msg: "this operation needs Authorization: Bearer <ADAPTBOT_ADMIN_TOKEN>"}
	}
}
