package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot/clip"
	"adaptbot/cluster"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/service"
)

// Learning from use at the edge: where failure cases are kept, the
// handlers of failures, repairs and feedback, and the `adaptbot tools
// failures|repair` commands. The service does the work (service/learning.go).

// failuresDir is where a server on files keeps its tools' failure cases,
// one JSON file per tool: beside the tools' history, written by the server
// alone.
func failuresDir(cfg Config) string { return filepath.Join(cfg.ToolsDir, ".failures") }

// learningParts are the failure store and what keeps it: the writer of
// its changes, and in a cluster the follower of the other replicas'.
type learningParts struct {
	store  *failures.Store
	follow func(ctx context.Context, store *failures.Store) error // nil on files
}

// openFailures opens the failure store: files beside the tools, or with a
// cluster link, the cluster's bucket.
func openFailures(ctx context.Context, cfg Config, link *cluster.Link, log *slog.Logger) (*learningParts, error) {
	var backend failures.Backend = &failures.Files{Dir: failuresDir(cfg)}
	parts := &learningParts{}
	if link != nil {
		kv, err := cluster.OpenFailures(ctx, link.NC, log)
		if err != nil {
			return nil, err
		}
		backend, parts.follow = kv, kv.Follow
	}
	st, err := failures.Load(ctx, backend, failures.Options{Keep: cfg.FailuresKeep, Log: log})
	if st == nil {
		return nil, fmt.Errorf("failure cases: %w", err)
	}
	if err != nil {
		log.Warn("failures: some failure cases were not read", "err", err)
	}
	parts.store = st
	return parts, nil
}

// learning is the service's configuration for learning from use.
func (p *learningParts) learning(cfg Config) service.Learning {
	if p == nil {
		return service.Learning{}
	}
	return service.Learning{Failures: p.store, AutoRepair: cfg.AutoRepair, RepairAfter: cfg.RepairAfter, RepairEvery: cfg.RepairEvery}
}

// start writes the store's changes, follows the cluster's, and runs the
// automatic repairs, until the returned stop, which waits for the last
// changes to be written.
func (p *learningParts) start(svc *service.Service, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	n := 2
	go func() { p.store.Run(ctx); done <- struct{}{} }()
	go func() { svc.RunLearning(ctx); done <- struct{}{} }()
	if p.follow != nil {
		n++
		go func() {
			if err := p.follow(ctx, p.store); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("cluster: stopped following the failure cases", "err", err)
			}
			done <- struct{}{}
		}()
	}
	return func() {
		cancel()
		for range n {
			<-done
		}
	}
}

// handleToolFailures answers a tool's failure cases and repairs: GET
// /api/tools/<name>/failures.
func (s *Server) handleToolFailures() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.Failures(c.UserContext(), c.Params("name"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleFailureSummary counts every tool's failure cases, for /tools: GET
// /api/failures.
func (s *Server) handleFailureSummary() fiber.Handler {
	return func(c *fiber.Ctx) error {
		sum, err := s.svc.FailureSummary(c.UserContext())
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tools": sum})
	}
}

// handleCaseConfirm makes a thumbs-down case open: POST
// /api/tools/<name>/failures/<id>/confirm.
func (s *Server) handleCaseConfirm() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.ConfirmCase(c.UserContext(), c.Params("name"), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleCaseDismiss removes a case: DELETE /api/tools/<name>/failures/<id>.
func (s *Server) handleCaseDismiss() fiber.Handler {
	return func(c *fiber.Ctx) error {
		rep, err := s.svc.DismissCase(c.UserContext(), c.Params("name"), c.Params("id"))
		if err != nil {
			return err
		}
		return c.JSON(rep)
	}
}

// handleToolRepair repairs a tool from its failure cases: POST
// /api/tools/<name>/repair, with an optional {"cases": ["id", ...]}. The
// answer is the build's result as JSON, or with Accept: text/event-stream
// its progress as Server-Sent Events, then one "result" (or "error") event.
func (s *Server) handleToolRepair() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req service.RepairRequest
		if len(bytes.TrimSpace(c.Body())) > 0 {
			if err := decodeJSON(c.Body(), &req, true); err != nil {
				return err
			}
		}
		name := c.Params("name")
		if !acceptsEvents(c) {
			ctx, stop := watchConn(c.UserContext(), c.Context().Conn())
			defer stop()
			res, err := s.svc.Repair(ctx, name, req, nil)
			if err != nil {
				return err
			}
			return c.JSON(res)
		}
		if err := s.svc.CanRepair(c.UserContext(), name, req); err != nil {
			return err // before any event: a status the client can read
		}
		s.streamEvents(c, func(ctx context.Context, send func(event string, v any)) {
			res, err := s.svc.Repair(ctx, name, req, func(ev generator.Event) { send("progress", ev) })
			if err != nil {
				send("error", eventError(err, s.log))
				return
			}
			send("result", res)
		})
		return nil
	}
}

// handleFeedback rates a chat answer: POST /api/requests/<id>/feedback
// with {"score": 1|-1, "comment": "..."}.
func (s *Server) handleFeedback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req service.FeedbackRequest
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		res, err := s.svc.Feedback(c.UserContext(), c.Params("id"), req)
		if err != nil {
			return err
		}
		return c.JSON(res)
	}
}

// toolsLearning is `adaptbot tools failures NAME` and `adaptbot tools
// repair NAME [CASE...]`, through the server.
func toolsLearning(ctx context.Context, c *client, sub string, args []string, format string, stdout, stderr io.Writer) error {
	path := "/api/tools/" + url.PathEscape(args[0])
	switch sub {
	case "failures":
		var rep service.FailureReport
		if err := c.call(ctx, http.MethodGet, path+"/failures", nil, &rep); err != nil {
			return err
		}
		if format == "json" {
			return writeJSON(stdout, rep)
		}
		return writeFailures(stdout, &rep)
	case "repair":
		p := newProgressLine(stderr)
		res, err := c.stream(ctx, path+"/repair", service.RepairRequest{Cases: args[1:]}, p.show)
		p.done()
		if err != nil {
			return err
		}
		if format == "json" {
			if err := writeJSON(stdout, res); err != nil {
				return err
			}
		} else {
			if !res.OK {
				for _, a := range res.Log {
					fmt.Fprintf(stderr, "attempt %d:\n  %s\n", a.Number, strings.Join(a.Errors, "\n  "))
				}
			}
			fmt.Fprintln(stdout, res.Summary)
			for _, r := range res.Cases {
				fmt.Fprintf(stdout, "  case %s %s: %s\n", r.ID, clipLine(string(r.Input), 60), caseOutcome(r))
			}
		}
		if !res.OK {
			return &exitError{code: 1}
		}
		return nil
	}
	return usageError(toolsHelp(nil), "tools: unknown subcommand %q", sub)
}

// writeFailures prints a failure report as a table.
func writeFailures(w io.Writer, rep *service.FailureReport) error {
	fmt.Fprintf(w, "%s, version %d serving", rep.Tool, rep.Version)
	if rep.PendingVersion > 0 {
		fmt.Fprintf(w, " (version %d waits for approval)", rep.PendingVersion)
	}
	fmt.Fprintf(w, ": %d failure case%s, %d open, %d unconfirmed; automatic repair %s after %d (%d since the last change)\n",
		len(rep.Cases), plural(len(rep.Cases)), rep.Open, rep.Unconfirmed, rep.Auto.Mode, rep.Auto.After, rep.Auto.SinceChange)
	if len(rep.Cases) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tVERSION\tKIND\tCOUNT\tLAST SEEN\tSTATUS\tINPUT\tERROR")
		for _, c := range rep.Cases {
			status := string(c.Status)
			if c.FixedIn > 0 {
				status = fmt.Sprintf("fixed in v%d", c.FixedIn)
			}
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%d\t%s\t%s\t%s\t%s\n", c.ID, c.Version, c.Kind, c.Count, c.LastSeen.Format("2006-01-02 15:04:05"),
				status, clipLine(string(c.Args), 40), clipLine(cmpOr(c.Comment, c.Message), 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, r := range rep.Repairs {
		who := "by a person"
		if r.Auto {
			who = "automatic"
		}
		outcome := "failed: " + r.Error
		switch {
		case r.OK && r.Pending:
			outcome = fmt.Sprintf("made version %d, waiting for approval; fixed %d of %d cases", r.Version, len(r.Fixed), len(r.Cases))
		case r.OK:
			outcome = fmt.Sprintf("made version %d; fixed %d of %d cases", r.Version, len(r.Fixed), len(r.Cases))
		}
		fmt.Fprintf(w, "repair %s (%s) of version %d: %s\n", r.At.Format(time.DateTime), who, r.From, outcome)
	}
	return nil
}

func caseOutcome(r generator.CaseResult) string {
	switch {
	case r.Outcome == generator.OutcomeResult && r.Example:
		return "now gives a result, kept as an example"
	case r.Outcome == generator.OutcomeResult:
		return "now gives a result"
	case r.OK:
		return "now a clear error: " + clipLine(r.Error, 80)
	}
	return "still fails (" + r.Outcome + "): " + clipLine(r.Error, 80)
}

// clipLine shortens s to one line of at most n characters.
func clipLine(s string, n int) string { return clip.Runes(strings.Join(strings.Fields(s), " "), n) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
