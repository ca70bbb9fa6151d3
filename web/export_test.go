package web

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Test serves one request in memory, without a listener, as Fiber's
// App.Test does.
func (s *Server) Test(req *http.Request, msTimeout ...int) (*http.Response, error) {
	return s.app.Test(req, msTimeout...)
}

// Handler is the edge as fasthttp's handler, to serve in memory.
func (s *Server) Handler() fasthttp.RequestHandler { return s.app.Handler() }

// registered lists the endpoints the edge registered with Fiber, as
// "METHOD /path" (HEAD and Fiber's internal ones left out).
func (s *Server) registered() []string {
	var out []string
	for _, r := range s.app.GetRoutes(true) {
		switch r.Method {
		case fiber.MethodHead, fiber.MethodConnect, fiber.MethodTrace, fiber.MethodOptions:
			continue
		}
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}
