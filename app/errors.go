package main

import (
	"errors"
	"log/slog"

	"github.com/gofiber/fiber/v2"
)

// apiError is the one error type handlers return: its status and message are
// what the user sees. Anything else becomes a 500 with a generic message, and
// the details go to the log, not to the user.
type apiError struct {
	Status int
	Msg    string
	// Extra fields merged into the JSON body.
	Extra fiber.Map
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
		case errors.As(err, &fe):
			status = fe.Code
			body["error"] = fe.Message
			if fe.Code == fiber.StatusRequestEntityTooLarge {
				body["error"] = "request body is too large"
			}
		default:
			log.Error("internal error", "method", c.Method(), "path", c.Path(), "err", err)
			body["error"] = "internal error; the server log has the details"
		}
		return c.Status(status).JSON(body)
	}
}
