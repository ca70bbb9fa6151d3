package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"adaptbot"
	"adaptbot/clip"
)

// Learning from use on the command line: `adaptbot tools failures NAME`
// and `adaptbot tools repair NAME [CASE...]`, through the server, which
// keeps the failure cases and does the repairs (service/learning.go).

// toolsFailures is `adaptbot tools failures NAME`: the tool's failure
// cases and repairs, from the server.
func toolsFailures(ctx context.Context, c adaptbot.LearningService, name, format string, stdout io.Writer) error {
	rep, err := c.Failures(ctx, name)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(stdout, rep)
	}
	return writeFailures(stdout, rep)
}

// toolsRepair is `adaptbot tools repair NAME [CASE...]`: a repair on the
// server, its progress on stderr.
func toolsRepair(ctx context.Context, c adaptbot.LearningService, name string, cases []string, format string, stdout, stderr io.Writer) error {
	p := newProgressLine(stderr)
	res, err := c.Repair(ctx, name, adaptbot.RepairRequest{Cases: cases}, adaptbot.Stream{Progress: p.show})
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
		return &ExitError{Code: 1}
	}
	return nil
}

// writeFailures prints a failure report as a table.
func writeFailures(w io.Writer, rep *adaptbot.FailureReport) error {
	fmt.Fprintf(w, "%s, version %d serving", rep.Tool, rep.Version)
	if rep.PendingVersion > 0 {
		fmt.Fprintf(w, " (version %d waits for approval)", rep.PendingVersion)
	}
	fmt.Fprintf(w, ": %d failure case%s, %d open, %d unconfirmed; automatic repair %s after %d (%d since the last change)\n",
		len(rep.Cases), clip.Plural(len(rep.Cases)), rep.Open, rep.Unconfirmed, rep.Auto.Mode, rep.Auto.After, rep.Auto.SinceChange)
	if len(rep.Cases) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tVERSION\tKIND\tCOUNT\tLAST SEEN\tSTATUS\tINPUT\tERROR")
		for _, c := range rep.Cases {
			status := string(c.Status)
			if c.FixedIn > 0 {
				status = fmt.Sprintf("fixed in v%d", c.FixedIn)
			}
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%d\t%s\t%s\t%s\t%s\n", c.ID, c.Version, c.Kind, c.Count, c.LastSeen.Format("2006-01-02 15:04:05"),
				status, clipLine(string(c.Args), 40), clipLine(cmp.Or(c.Comment, c.Message), 60))
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

func caseOutcome(r adaptbot.CaseResult) string {
	switch {
	case r.Outcome == adaptbot.CaseOutcomeResult && r.Example:
		return "now gives a result, kept as an example"
	case r.Outcome == adaptbot.CaseOutcomeResult:
		return "now gives a result"
	case r.OK:
		return "now a clear error: " + clipLine(r.Error, 80)
	}
	return "still fails (" + r.Outcome + "): " + clipLine(r.Error, 80)
}

// clipLine shortens s to one line of at most n characters.
func clipLine(s string, n int) string { return clip.Runes(strings.Join(strings.Fields(s), " "), n) }
