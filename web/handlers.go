package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/templates"
)

// The handlers of this file, build.go and learning.go decode a request,
// call one operation of the service and encode its answer (the table's
// read, named and body do it for the simplest). Every failure the
// service returns carries a kind; errorHandler (errors.go) turns it into a
// status, and eventError does the same for event streams.

func (s *Server) modelName() string { return s.svc.ModelName() }

func (s *Server) handleIndex() fiber.Handler {
	return func(c *fiber.Ctx) error {
		who := identity.From(c.UserContext())
		return page(c, "index.html", map[string]any{
			"Model":     s.modelName(),
			"Hint":      llm.ConfigureHint,
			"Tools":     s.svc.Health(c.UserContext()).Tools,
			"BuildOpen": who.Can(identity.Build),
		})
	}
}

func (s *Server) handleHealth() fiber.Handler {
	return func(c *fiber.Ctx) error {
		h := s.svc.Health(c.UserContext())
		body := fiber.Map{
			"status":  "ok",
			"model":   s.modelHealth(h.Model),
			"tools":   h.Tools,
			"sandbox": h.Sandbox,
		}
		if h.Degraded {
			// The pool is replacing workers; calls still queue and run.
			body["status"] = "degraded"
		}
		if h.HasRemote {
			body["mcp"] = fiber.Map{"servers": h.Servers, "tools": h.RemoteTools}
		}
		if len(h.Warnings) > 0 {
			body["warnings"] = h.Warnings
		}
		if h.Cluster != nil {
			// Not "degraded" when NATS is away: chats go on.
			body["cluster"] = h.Cluster
		}
		return c.JSON(body)
	}
}

// handleChat answers one message. A client that accepts text/event-stream
// gets Server-Sent Events instead of one JSON body: a "progress" event for
// each step of a build the message asks for, a "token" event ({"text"}) for
// each piece of the answer as the model writes it, then one "result" event
// (the JSON body) or one "error" event ({"error", "status", "request_id"}).
func (s *Server) handleChat() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req adaptbot.ChatRequest
		if err := decodeJSON(c.Body(), &req, false); err != nil {
			return err
		}
		if err := s.checkSizes(req); err != nil {
			return err
		}
		if !acceptsEvents(c) {
			// A tool's request that needs approval holds the answer until
			// the person decides (POST /api/approvals/ID; GET
			// /api/approvals lists what waits for them).
			ctx := adaptbot.WithAsker(c.UserContext(), adaptbot.Hold(nil))
			return reply(c)(s.svc.Chat(ctx, req, adaptbot.Stream{}))
		}
		// Refusals before any event, so that a client that streams gets a
		// status. An approval is an "approval" event, and the stream waits
		// for its answer.
		var p presenter
		chat, err := s.svc.PrepareChat(adaptbot.WithAsker(c.UserContext(), p.asker()), req)
		if err != nil {
			return err
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			p.to(send)
			return chat.Run(ctx, adaptbot.Stream{
				Progress: func(ev adaptbot.Event) { send("progress", ev) },
				Text:     func(text string) { send("token", tokenEvent{Text: text}) },
			})
		})
		return nil
	}
}

// tokenEvent is the body of a "token" event: a piece of the answer.
type tokenEvent struct {
	Text string `json:"text"`
}

// acceptsEvents reports whether the client asked for Server-Sent Events.
func acceptsEvents(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/event-stream")
}

// streamEvents answers with Server-Sent Events: those run sends as it
// works, then one "result" event with what it returns, or one "error"
// event (eventError). run gets the request's context (its identity and
// door), cancelled when the client goes away. The operation bounds its own
// time. run executes after the handler has returned, so it must not touch c.
func (s *Server) streamEvents(c *fiber.Ctx, run func(ctx context.Context, send func(event string, v any)) (any, error)) {
	openStream(c, c.UserContext(), func(ctx context.Context, write func(frame []byte)) {
		send := func(event string, v any) {
			data, err := json.Marshal(v)
			if err != nil {
				s.log.Error("event not encoded", "event", event, "err", err)
				data, _ = json.Marshal(fiber.Map{"error": "internal error; the server log has the details", "status": fiber.StatusInternalServerError})
				event = "error"
			}
			write(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data))
		}
		res, err := run(ctx, send)
		if err != nil {
			send("error", eventError(err, s.log))
			return
		}
		send("result", res)
	})
}

// openStream answers with a stream of Server-Sent Events that body writes
// after the handler has returned, holding the request's in-flight slot
// until it is done. body runs under base's values (identity, door) but its
// own cancellation: ctx ends when the client goes away, when a write
// cannot be flushed to it, or when body returns. write sends one whole
// frame; it may be called from other goroutines (progress is reported from
// them), and frames never interleave.
func openStream(c *fiber.Ctx, base context.Context, body func(ctx context.Context, write func(frame []byte))) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	release := holdSlot(c)
	conn := c.Context().Conn()
	base = context.WithoutCancel(base)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		ctx, stop := watchConn(base, conn)
		defer stop()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		write := func(frame []byte) {
			mu.Lock()
			defer mu.Unlock()
			w.Write(frame)
			if err := w.Flush(); err != nil {
				cancel() // the client went away: stop working for it
			}
		}
		body(ctx, write)
	})
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

// handleToolRun runs a tool directly. A client that accepts
// text/event-stream is asked for the approvals its tool's requests need:
// an "approval" event for each, the stream waiting for its answer (POST
// /api/approvals/ID: the command line asks y/N, the tool page shows a
// card), then one "result" or "error" event. A plain JSON run cannot ask:
// such a request is refused, in words that say so, and nothing is sent.
func (s *Server) handleToolRun() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name, args := c.Params("name"), c.Body()
		if !acceptsEvents(c) {
			return reply(c)(s.svc.Run(c.UserContext(), name, args))
		}
		var p presenter
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) (any, error) {
			p.to(send)
			return s.svc.Run(adaptbot.WithAsker(ctx, p.asker()), name, args)
		})
		return nil
	}
}

// handleToolDiff returns a unified diff between two kept versions:
// GET /api/tools/<name>/diff?from=A&to=B. Without to, the newest version;
// without from, the one before to.
func (s *Server) handleToolDiff() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		num := func(key string) (int, error) {
			v := c.Query(key)
			if v == "" {
				return 0, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, badRequest(fmt.Sprintf("%s=%q: want a version number ≥ 1; GET /api/tools/%s/versions lists them", key, v, name))
			}
			return n, nil
		}
		from, err := num("from")
		if err != nil {
			return err
		}
		to, err := num("to")
		if err != nil {
			return err
		}
		return reply(c)(s.svc.Diff(c.UserContext(), name, from, to))
	}
}

// handleRequestPage shows one stored request with its trace, for a person:
// GET /requests/<id>, where the dashboard's trace links go. Who may not
// read it gets the error page, as from GET /api/requests/<id>.
func (s *Server) handleRequestPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := s.svc.Request(c.UserContext(), c.Params("id"))
		if err != nil {
			return err
		}
		return page(c, "request.html", map[string]any{"R": r, "Model": s.modelName()})
	}
}

// handleRequests lists the newest stored requests: GET /api/requests.
func (s *Server) handleRequests() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return reply(c)(s.svc.Requests(c.UserContext(), c.QueryInt("limit", 50)))
	}
}

// page renders a template as the response, with the status already set.
func page(c *fiber.Ctx, name string, data map[string]any) error {
	var b bytes.Buffer
	if err := templates.Pages.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	c.Type("html", "utf-8")
	return c.Send(b.Bytes())
}

// checkSizes refuses a chat message or history over the limits, with 413:
// the one place the history's length is checked.
func (s *Server) checkSizes(req adaptbot.ChatRequest) error {
	if n, limit := len(req.Message), s.opts.Limits.MaxMessage; n > limit {
		return &apiError{Status: fiber.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("the message is %d bytes; the limit is %d (ADAPTBOT_MAX_MESSAGE): shorten it or send it in parts", n, limit)}
	}
	if len(req.History) > adaptbot.MaxHistory {
		return &apiError{Status: fiber.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf(`"history" has %d messages; send at most the last %d`, len(req.History), adaptbot.MaxHistory)}
	}
	return nil
}
