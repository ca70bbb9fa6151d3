package web

import (
	"cmp"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// benchmarkFilter reads the filter of /dashboard and /api/benchmarks from the
// query string.
func benchmarkFilter(c *fiber.Ctx) (adaptbot.Filter, error) {
	f, err := adaptbot.ParseFilter(func(name string) string { return c.Query(name) }, time.Now())
	if err != nil {
		return f, badRequest(err.Error())
	}
	return f, nil
}

// handleBenchmarks answers the summary of the rows the query's filter selects
// (since, until, intent, tool, path, outcome) from the in-memory aggregates.
func (s *Server) handleBenchmarks() fiber.Handler {
	return func(c *fiber.Ctx) error {
		f, err := benchmarkFilter(c)
		if err != nil {
			return err
		}
		return reply(c)(s.svc.Benchmarks(c.UserContext(), f))
	}
}

// option is one choice of a select on the page.
type option struct {
	Value, Label string
	Selected     bool
}

// handleDashboard serves the page; its script fetches /api/benchmarks with
// the same query string and draws the charts.
func (s *Server) handleDashboard() fiber.Handler {
	return func(c *fiber.Ctx) error {
		f, ferr := benchmarkFilter(c)
		data := map[string]any{
			"Path":     s.opts.Benchmarks,
			"Until":    c.Query("until"),
			"Tool":     f.Tool,
			"PathF":    f.Path,
			"Outcome":  f.Outcome,
			"User":     f.User,
			"Error":    "",
			"Quantile": fmt.Sprintf("%.0f", 100*s.opts.QuantileError),
		}
		if ferr != nil {
			data["Error"] = ferr.Error()
		}
		since := c.Query("since")
		var sinceOpts []option
		known := false
		for _, v := range []string{"", "1h", "6h", "24h", "7d", "30d"} {
			label := "last " + v
			if v == "" {
				label = "all time"
			}
			sinceOpts = append(sinceOpts, option{Value: v, Label: label, Selected: v == since})
			known = known || v == since
		}
		if !known {
			sinceOpts = append(sinceOpts, option{Value: since, Label: since, Selected: true})
		}
		data["SinceOptions"] = sinceOpts
		var intentOpts []option
		for _, v := range []string{"", adaptbot.IntentChat, adaptbot.IntentBuild, adaptbot.IntentRun, adaptbot.IntentFeedback, adaptbot.IntentManage, adaptbot.IntentApprove} {
			intentOpts = append(intentOpts, option{Value: v, Label: cmp.Or(v, "any"), Selected: v == f.Intent})
		}
		data["IntentOptions"] = intentOpts
		return page(c, "dashboard.html", data)
	}
}
