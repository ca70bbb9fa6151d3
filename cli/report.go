package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot/benchmarks"
	"adaptbot/cluster"
)

const reportUsage = `Usage: adaptbot report [flags] [CSV]

Summarizes the benchmarks CSV (ADAPTBOT_BENCHMARKS, or the CSV given), or
exports the rows a filter selects. With ADAPTBOT_NATS_URL set and no CSV
given, it reads every replica's rows from the cluster's stream instead.

Flags:
  --format text|md|json|csv  text (default): tables for a terminal; md: Markdown
                             tables to paste into a document; json: the same
                             summary /api/benchmarks answers, "requests" first;
                             csv: the selected rows themselves, for pandas or DuckDB
  --since T, --until T       a time (2026-03-01T10:00:00Z or 2026-03-01) or a
                             duration before now (24h, 90m, 7d)
  --intent I                 one kind of request: CHAT, BUILD, RUN, FEEDBACK
                             (a thumbs up or down) or MANAGE (a change to the
                             users)
  --tool NAME                requests that ran the tool
  --path P                   one path: general, need_tool, a tool, one kind of
                             work on a tool (build_create, build_modify,
                             build_delete, build_rollback, build_approve,
                             build_test, build_plan, build_import, build_skill),
                             build (any of them), or one change to the users
                             (users_add, users_role, users_rotate,
                             users_remove, users_end_sessions)
  --outcome O                ok (no error), error, or not_configured (refused
                             because no language model is configured; these
                             are counted apart, never as errors)
  --user U                   one person's requests: their pseudonym, as the
                             CSV's user column holds it
  --out FILE                 write to FILE instead of standard output
  -h, --help                 this help
`

// reportCommand is `adaptbot report`; the CSV is ADAPTBOT_BENCHMARKS unless
// one is named.
func reportCommand(e Env, args []string) error {
	cfg, stdout, stderr := e.Config, e.Stdout, e.Stderr
	fs := NewFlags("report")
	format := fs.String("format", "text", "")
	out := fs.String("out", "", "")
	values := map[string]*string{}
	for _, name := range []string{"since", "until", "intent", "tool", "path", "outcome", "user"} {
		values[name] = fs.String(name, "", "")
	}
	if err := e.Parse(fs, args, reportUsage); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return UsageError(reportUsage, "report: one CSV at most, got %q", fs.Args())
	}
	file := fs.Arg(0)
	switch *format {
	case "text", "md", "json", "csv":
	default:
		return UsageError(reportUsage, "report: --format %q is not text, md, json or csv", *format)
	}
	f, err := benchmarks.ParseFilter(func(name string) string { return *values[name] }, time.Now())
	if err != nil {
		return UsageError(reportUsage, "report: %v", err)
	}
	path := cmp.Or(file, cfg.Benchmarks, benchmarks.DefaultPath)
	if cfg.NATSURL == "" || file != "" {
		// A CSV that is not there holds no requests, but it is not an
		// empty one either: a mistyped name, or a server that never ran.
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if file != "" {
				return fmt.Errorf("report: there is no CSV %s", file)
			}
			return fmt.Errorf("report: there is no benchmarks CSV at %s yet: the server writes it, one row per request (start it with adaptbot serve), or name a CSV: adaptbot report FILE.csv", path)
		} else if err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}

	w := stdout
	var outFile *os.File
	if *out != "" {
		if outFile, err = os.Create(*out); err != nil {
			return fmt.Errorf("report: --out %s: cannot write it: %w", *out, errors.Unwrap(err))
		}
		defer outFile.Close()
		w = outFile
	}
	warn := func(err error) error {
		var bad *benchmarks.BadLinesError
		if errors.As(err, &bad) {
			fmt.Fprintln(stderr, "warning:", bad.Error())
			return nil
		}
		return err
	}

	// In a cluster, and with no CSV named: every replica's rows, from the
	// stream.
	var nc *nats.Conn
	if cfg.NATSURL != "" && file == "" {
		if nc, err = cluster.Connect(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, Name: "adaptbot report", Log: slog.New(slog.DiscardHandler)}); err != nil {
			return err
		}
		defer nc.Close()
	}

	if *format == "csv" {
		export := func() (int, error) { return benchmarks.Export(path, f, w) }
		if nc != nil {
			export = func() (int, error) { return cluster.ExportRows(context.Background(), nc, f, w) }
		}
		n, err := export()
		if err = warn(err); err != nil {
			return err
		}
		if *out != "" {
			fmt.Fprintf(stderr, "%d rows written to %s\n", n, *out)
		}
	} else {
		var stats *benchmarks.Store
		if nc != nil {
			stats, path, err = cluster.Stats(context.Background(), nc)
		} else {
			stats, err = benchmarks.LoadFile(path)
		}
		if err = warn(err); err != nil {
			return err
		}
		sum := stats.Query(f)
		switch *format {
		case "json":
			err = benchmarks.WriteJSON(w, sum)
		case "md":
			err = benchmarks.WriteMarkdown(w, sum)
		default:
			fmt.Fprintf(w, "%s\n\n", path)
			err = benchmarks.WriteText(w, sum)
		}
		if err != nil {
			return err
		}
	}
	if outFile != nil {
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}
