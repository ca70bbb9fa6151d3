package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// apiError is a refusal of the edge's own, before any operation starts: a
// body too large, a host or origin refused, a client over its rate. Every
// other failure is a *adaptbot.Error, whose Kind decides the status.
type apiError struct {
	Status int
	Msg    string
	// RetryAfter, when set, goes out as the Retry-After header (whole
	// seconds, at least 1) and as "retry_after" in the body.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(msg string) error { return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: msg} }

// statusOf is the one switch from a failure's kind to an HTTP status.
func statusOf(k adaptbot.Kind) int {
	switch k {
	case adaptbot.Invalid:
		return fiber.StatusBadRequest
	case adaptbot.Unauthenticated:
		return fiber.StatusUnauthorized
	case adaptbot.Forbidden:
		return fiber.StatusForbidden
	case adaptbot.NotFound:
		return fiber.StatusNotFound
	case adaptbot.Conflict:
		return fiber.StatusConflict
	case adaptbot.Gone:
		return fiber.StatusGone
	case adaptbot.Failed:
		return fiber.StatusUnprocessableEntity
	case adaptbot.Limited:
		return fiber.StatusTooManyRequests
	case adaptbot.Unavailable, adaptbot.NotConfigured:
		return fiber.StatusServiceUnavailable
	case adaptbot.Timeout:
		return fiber.StatusGatewayTimeout
	case adaptbot.Upstream:
		return fiber.StatusBadGateway
	case adaptbot.Cancelled:
		return statusClientClosed
	}
	return fiber.StatusInternalServerError
}

// kindOfStatus is the kind a refusal of the edge's own (an *apiError, a
// *fiber.Error) records in its row, from the status it answers with.
func kindOfStatus(status int) adaptbot.Kind {
	// The kinds an edge refusal has, by the status statusOf gives them.
	for _, k := range []adaptbot.Kind{adaptbot.Unauthenticated, adaptbot.Forbidden, adaptbot.NotFound, adaptbot.Limited, adaptbot.Unavailable} {
		if statusOf(k) == status {
			return k
		}
	}
	if status < 500 {
		return adaptbot.Invalid
	}
	return adaptbot.Internal
}

// statusClientClosed is logged for work whose client went away; the client
// never sees it.
const statusClientClosed = 499

// errorBody is what a client sees of err, as a status and a JSON object:
// the same for a JSON answer and for an event stream's "error" event.
// Anything that is neither ours nor Fiber's is a fault of ours: its
// details go to the log, never to a person.
func errorBody(err error, log *slog.Logger) (int, time.Duration, fiber.Map) {
	body := fiber.Map{}
	var retry time.Duration
	status := fiber.StatusInternalServerError
	if se, ok := errors.AsType[*adaptbot.Error](err); ok {
		status, retry = statusOf(se.Kind), se.RetryAfter
		for k, v := range se.Extra {
			body[k] = v
		}
		body["error"], body["error_kind"] = se.Msg, se.Kind
		if se.RequestID != "" {
			body["request_id"] = se.RequestID
		}
	} else if ae, ok := errors.AsType[*apiError](err); ok {
		status, retry = ae.Status, ae.RetryAfter
		body["error"] = ae.Msg
	} else if fe, ok := errors.AsType[*fiber.Error](err); ok {
		status = fe.Code
		body["error"] = fe.Message
	} else {
		log.Error("internal error", "err", err)
		body["error"] = "internal error; the server log has the details"
	}
	if retry > 0 {
		body["retry_after"] = retryAfterSeconds(retry)
	}
	return status, retry, body
}

func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		status, retry, body := errorBody(err, log)
		if id, ok := c.Locals(refusedKey{}).(string); ok {
			body["request_id"] = id // the refusal's row (refusals.go)
			c.Set(RequestIDHeader, id)
		}
		// Only here: the body limit refuses a request before any handler,
		// so an event stream never carries this.
		if fe, ok := errors.AsType[*fiber.Error](err); ok && fe.Code == fiber.StatusRequestEntityTooLarge {
			body["error"] = bodyTooLarge(c)
		}
		if retry > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds(retry)))
		}
		if strings.HasPrefix(c.Path(), openAIPrefix) {
			return c.Status(status).JSON(openAIError(status, body)) // openai.go
		}
		if c.Method() == fiber.MethodGet && wantsPage(c) && !strings.HasPrefix(c.Path(), "/api/") {
			// A person navigating to a page reads the error as a page.
			msg, _ := body["error"].(string)
			if fe, ok := errors.AsType[*fiber.Error](err); ok && fe.Code == fiber.StatusNotFound {
				msg = "There is no page at " + c.Path() + "." // not Fiber's "Cannot GET /path"
			}
			return page(c.Status(status), "error.html", map[string]any{"Title": pageTitle(status), "Message": msg})
		}
		return c.Status(status).JSON(body)
	}
}

// pageTitle heads the error page of a status.
func pageTitle(status int) string {
	switch status {
	case fiber.StatusForbidden:
		return "Not allowed"
	case fiber.StatusNotFound:
		return "Not found"
	}
	if status >= 500 {
		return "Something went wrong"
	}
	return "This page cannot be shown"
}

// eventError is the body of an "error" event: what the JSON error body
// would have said, with its status.
func eventError(err error, log *slog.Logger) fiber.Map {
	status, _, body := errorBody(err, log)
	body["status"] = status
	return body
}

func retryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// jsonError turns a JSON decoding error into words about the request body,
// without Go type names.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest(fmt.Sprintf("request body is not valid JSON: %s (at byte %d)", strings.TrimPrefix(syn.Error(), "json: "), syn.Offset))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest(fmt.Sprintf("request body is not valid JSON for this endpoint: want an object, got %s", jsonKind(typ.Value)))
		}
		return badRequest(fmt.Sprintf("request body is not valid JSON for this endpoint: %q must be %s, not %s", field, kindOf(typ.Type.Kind().String()), jsonKind(typ.Value)))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON: it ends too early")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return badRequest("request body is not valid JSON for this endpoint: unknown field " + f)
	}
	return badRequest("request body is not valid JSON")
}

// kindOf names a Go kind the way a JSON user would.
func kindOf(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice", kind == "array":
		return "an array"
	}
	return "an object"
}

// jsonKind names what json.UnmarshalTypeError.Value says was found.
func jsonKind(v string) string {
	switch v {
	case "string", "bool", "number", "array", "object":
		if v == "array" || v == "object" {
			return "an " + v
		}
		return "a " + v
	}
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	return v
}

func notFound(msg string) error { return &adaptbot.Error{Kind: adaptbot.NotFound, Msg: msg} }
