package main

import (
	"context"
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

	"adaptbot/agent"
	"adaptbot/llm"
)

// apiError is the one error type handlers return: its status and message are
// what the user sees. Anything else becomes a 500 with a generic message, and
// the details go to the log, not to the user.
type apiError struct {
	Status int
	Msg    string
	// Extra fields merged into the JSON body.
	Extra fiber.Map
	// RetryAfter, when set, goes out as the Retry-After header (whole
	// seconds, at least 1) and as "retry_after" in the body.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(msg string) error { return &apiError{Status: fiber.StatusBadRequest, Msg: msg} }
func notFound(msg string) error   { return &apiError{Status: fiber.StatusNotFound, Msg: msg} }

func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var ae *apiError
		var fe *fiber.Error
		body := fiber.Map{}
		status := fiber.StatusInternalServerError
		switch {
		case errors.As(err, &ae):
			status = ae.Status
			body["error"] = ae.Msg
			for k, v := range ae.Extra {
				body[k] = v
			}
			if ae.RetryAfter > 0 {
				secs := retryAfterSeconds(ae.RetryAfter)
				c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
				body["retry_after"] = secs
			}
		case errors.As(err, &fe):
			status = fe.Code
			body["error"] = fe.Message
			if fe.Code == fiber.StatusRequestEntityTooLarge {
				body["error"] = fmt.Sprintf("request body is too large: the limit is %d KiB", c.App().Config().BodyLimit>>10)
			}
		default:
			log.Error("internal error", "method", c.Method(), "path", c.Path(), "err", err)
			body["error"] = "internal error; the server log has the details"
		}
		return c.Status(status).JSON(body)
	}
}

func retryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// workError is the one place that turns the failure of a chat or a build
// into what the user sees: a status and words they can act on, never our
// Go types, graph node names or the model's raw output (those go to the
// log, under the request ID). deadline is the work's deadline, for the
// words.
func workError(err error, id string, deadline time.Duration) *apiError {
	extra := fiber.Map{}
	if id != "" {
		extra["request_id"] = id
	}
	if e, ok := llm.AsError(err); ok {
		ae := &apiError{Status: fiber.StatusBadGateway, Msg: e.Error(), Extra: extra}
		switch e.Kind {
		case llm.Overloaded:
			ae.Status = fiber.StatusServiceUnavailable
			ae.RetryAfter = max(e.RetryAfter, time.Second)
		case llm.Timeout:
			ae.Status = fiber.StatusGatewayTimeout
		}
		return ae
	}
	switch {
	case errors.Is(err, llm.ErrNoModel):
		return &apiError{Status: fiber.StatusServiceUnavailable, Msg: "Chat needs a language model. " + err.Error(), Extra: extra}
	case errors.Is(err, agent.ErrForbidden):
		return &apiError{Status: fiber.StatusForbidden, Msg: err.Error(), Extra: extra}
	case errors.Is(err, context.DeadlineExceeded) && deadline <= 0:
		return &apiError{Status: fiber.StatusGatewayTimeout, Extra: extra,
			Msg: "this did not finish within its deadline (derived from ADAPTBOT_MODEL_TIMEOUT and ADAPTBOT_MODEL_RETRIES); try again, or raise those settings for a slow model"}
	case errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: fiber.StatusGatewayTimeout, Extra: extra,
			Msg: fmt.Sprintf("this did not finish within its deadline of %s (derived from ADAPTBOT_MODEL_TIMEOUT and ADAPTBOT_MODEL_RETRIES); try again, or raise those settings for a slow model", deadline.Round(time.Second))}
	case errors.Is(err, context.Canceled):
		return &apiError{Status: statusClientClosed, Msg: "the request was cancelled: the client went away", Extra: extra}
	}
	return &apiError{Status: fiber.StatusBadGateway, Extra: extra,
		Msg: "the model did not give a usable answer; try again or rephrase (the server log has the details under request_id " + id + ")"}
}

// statusClientClosed is logged for work whose client went away; the client
// never sees it.
const statusClientClosed = 499

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
