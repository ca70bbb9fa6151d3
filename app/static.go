package main

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"

	"adaptbot/templates"
)

// handleStatic serves the pages' scripts from templates/static: pages have
// no inline script, so the Content-Security-Policy can forbid it.
func (s *Server) handleStatic() fiber.Handler {
	return filesystem.New(filesystem.Config{Root: http.FS(templates.Static), PathPrefix: "", MaxAge: 300})
}
